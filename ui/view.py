"""How the Playground is shown — for a class or a focused demo — as plain data that a link holds:
presenter view, the step reached in the step-through, the control groups hidden and the panels
shown. Parsed from URL parameters with validation: a bad value falls back to its default and
is reported by name, never an exception. (The scenario itself is attention_lab/scenario.py.)"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

GROUPS = ("tokens", "embed", "qkv", "score", "mask", "notation")  # control groups a lesson link may hide
STEP_PANELS = ("scores", "scaled", "masked", "weights", "output", "inspector")  # a lesson may show; step-through order
STEP_COUNT = len(STEP_PANELS)
URL = {"present": "present", "step": "step", "hide": "hide", "panels": "panels", "student": "student"}
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "0.0.0.0")  # a link to these opens nothing on a student's phone
_HOST = re.compile(r"^(?:(https?)://)?([A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::(\d{1,5}))?/?$")


@dataclass(frozen=True)
class View:
    present: bool = False
    step: int = 0  # 0: everything at once; k ≥ 1: the first k panels of the step-through
    hidden: frozenset[str] = field(default_factory=frozenset)
    panels: tuple[str, ...] = STEP_PANELS
    student: bool = False  # a student's lesson link: no presenter toggle, step-through or Share tab

    def shows(self, panel: str) -> bool:
        """Whether a panel is drawn: chosen for the lesson, and reached by the step-through."""
        if panel not in self.panels:
            return False
        return self.step == 0 or STEP_PANELS.index(panel) < self.step


def _names(raw: str, allowed: tuple[str, ...]) -> tuple[str, ...] | None:
    items = [s for s in raw.split(",") if s] if isinstance(raw, str) and len(raw) <= 200 else None
    if items is None or any(s not in allowed for s in items):
        return None
    return tuple(s for s in allowed if s in items)  # canonical order, no repeats


def from_query(params: dict[str, str]) -> tuple[View, list[str]]:
    """(view, refused parameter names) from a link's query parameters."""
    values, refused = {}, []
    raw = params.get(URL["present"])
    if raw is not None:
        if raw in ("1", "0", "true", "false"):
            values["present"] = raw in ("1", "true")
        else:
            refused.append(URL["present"])
    raw = params.get(URL["student"])
    if raw is not None:
        if raw in ("1", "0"):
            values["student"] = raw == "1"
        else:
            refused.append(URL["student"])
    raw = params.get(URL["step"])
    if raw is not None:
        if isinstance(raw, str) and raw.isdigit() and 0 <= int(raw) <= STEP_COUNT:
            values["step"] = int(raw)
        else:
            refused.append(URL["step"])
    for name, allowed, key in (("hide", GROUPS, "hidden"), ("panels", STEP_PANELS, "panels")):
        raw = params.get(URL[name])
        if raw is None:
            continue
        names = _names(raw, allowed)
        if names is None or (key == "panels" and not names):
            refused.append(URL[name])
        else:
            values[key] = frozenset(names) if key == "hidden" else names
    return View(**values), refused


def to_query(view: View) -> dict[str, str]:
    """The parameters that differ from the default view."""
    q = {}
    if view.present:
        q[URL["present"]] = "1"
    if view.step:
        q[URL["step"]] = str(view.step)
    if view.hidden:
        q[URL["hide"]] = ",".join(g for g in GROUPS if g in view.hidden)
    if view.panels != STEP_PANELS:
        q[URL["panels"]] = ",".join(view.panels)
    if view.student:
        q[URL["student"]] = "1"
    return q


def url_keys() -> set[str]:
    return set(URL.values())


def is_local(url: str) -> bool:
    """Whether a link's host is this machine only (localhost, 127.0.0.1, …): a phone cannot open it."""
    host = (urlsplit(url).hostname or "").lower()
    return host in LOCAL_HOSTS or host.endswith(".localhost")


def with_host(url: str, host: str) -> str | None:
    """``url`` with its scheme, host and port replaced by ``host`` (``192.168.0.12:8501`` or
    ``https://lab.example.org``: a server behind a proxy, or the address students reach); the
    path and query stay. None when ``host`` is not a plain host[:port] (nothing else is taken)."""
    m = _HOST.match(host.strip()) if isinstance(host, str) and len(host) <= 260 else None
    if m is None or (m.group(3) and not 0 < int(m.group(3)) < 65536):
        return None
    parts = urlsplit(url)
    netloc = m.group(2) + (f":{m.group(3)}" if m.group(3) else "")
    return urlunsplit((m.group(1) or parts.scheme or "http", netloc, parts.path, parts.query, parts.fragment))
