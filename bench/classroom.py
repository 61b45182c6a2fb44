"""A class on one server: ``python -m bench.classroom --sessions 40`` (prints Markdown; ``--json`` saves it all).

Starts a real ``streamlit run app.py`` (bench/serve.py: headless, a free port on 127.0.0.1) and drives N sessions at once
with cheap clients that speak Streamlit's own websocket protocol (``/_stcore/stream``, subprotocol
``streamlit``, protobuf ``BackMsg`` / ``ForwardMsg``): one asyncio event loop, one websocket per session,
no browser. Each client does what the browser does for the same clicks: it sends ``rerun_script`` with the
changed widget's id and value (and the ``fragment_id`` when the widget sits in an ``st.fragment``), the
query string the server last set, and the hashes of the cacheable messages it keeps (``ref_hash`` replies
are resolved from that cache). It reads the element deltas to learn the widgets' ids, values and options.

A student (one session):

1. ``open``: opens the Playground (a rerun with ``page_name`` "Playground", as a browser opening
   ``/Playground``), ramped over ``--ramp`` seconds across the class;
2. then ``--actions`` times (or until ``--duration`` seconds), after a think time in ``--think MIN MAX``:
   - ``tokens``: types a new sentence of 3–8 words into the token box (text input, fragment rerun);
   - ``causal``: toggles the causal-mask checkbox (in the "Mask" setup tab);
   - ``score``: picks another score function (radio in the "Score function" tab);
   - ``page``: switches to one of ``--pages`` (full rerun of that page), or back to the Playground;
   - ``write`` (only with ``--write W``, its weight beside tokens 4, causal 2, score 2, page 2): goes to the
     language-model page (SmolLM2-135M) when elsewhere, then clicks "Write one token" (each click writes
     one more token of the same seeded continuation, up to the page's 64);
   - ``tab``: not chosen by itself: the setup tabs draw only the open tab (``st.tabs(on_change="rerun")``),
     so when ``causal`` or ``score`` is not among the last deltas the student first clicks the tab
     whose label names it (then the other tabs), and that click is timed as ``tab``.
   After a page switch back, the token box must show the student's last tokens (else a ``state`` error).
   Every change is checked: the widget the run redraws must hold the value sent (the scenario's widgets
   are redrawn with their kept value), a page switch must land on its page; else it is counted as
   ``unapplied``. An action the student cannot do (its widget not drawn after the tabs were tried) is
   ``skipped``. ``--strict`` exits with 1 when anything was skipped, unapplied or an error
   (tests/bench/test_classroom_smoke.py runs it for 10 seconds with 3 sessions).
3. ``burst`` (not in soak mode): every session back on the Playground, then all N change the tokens
   within one second; reported: the time from the first send until the last session is served.

``--soak MINUTES``: 10 sessions (unless ``--sessions`` is given) for MINUTES, each action one of: a page
switch to any page of the app, or a change of any radio, checkbox, select box, numeric slider or number
input the page drew (one step for sliders and numbers), or new tokens. Buttons (e.g. Seq2seq's training),
uploads, downloads, data editors and chart clicks are not touched. RSS is sampled all along.

Measured per action type: the time from sending the BackMsg to the ``script_finished`` that ends the
rerun (runs ended early by an ``st.rerun`` are followed to their end). Errors: ``exception`` elements,
error alerts (``st.error``: the app turns any failure into one), compile errors, ``page_not_found``,
timeouts (``--timeout``; the session then stops), disconnects, lost state; plus the server log's
tracebacks. The server's RSS and CPU are sampled every 0.5 s (psutil), with the machine's total CPU, so
that the other processes' share is visible. After all clients disconnect:
the server's session count as Streamlit's own ``/_stcore/metrics`` reports it (``active_sessions``, the
sessions with an open websocket, and the connect/disconnect counters), and the established TCP
connections to the server's port. ``--probe-chromium`` measures what one headless Chromium page costs
(memory of the browser's processes, CPU per token change) for comparison with these clients.

All traffic goes to 127.0.0.1. Loops are bounded by count and by time.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import websockets
from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attention_lab.strings import LANGS, translate
from bench import serve
from ui import state
from ui.nav import PAGE_BY_NAME

# The widgets a student touches, by key (ui/state.py): a widget id ends with its key ("$$ID-<hash>-<key>").
WIDGET_KEYS = {
    "tokens": state.SCENARIO.tokens,
    "causal": state.SCENARIO.causal,
    "score": state.SCENARIO.score,
    "tab": state.PLAYGROUND.tab,  # the Playground's setup tabs (st.tabs with a key)
    "write": state.LANGUAGE_MODEL.one,  # the language-model page's "Write one token" button
}


def page_url(page: str) -> str:
    """A page's URL path (ui/nav.py): page_url("multi_head") == "Multi-head"."""
    return PAGE_BY_NAME[page].url


WRITE_PAGE = page_url("language_model")
# the setup tab that draws a widget, by its label in every language (tried first; the other tabs next)
TAB_WORDS = {"causal": tuple(translate("class.tab.mask", lang).lower() for lang in LANGS),
             "score": tuple(translate("class.tab.score", lang).lower() for lang in LANGS)}
START_PAGE = page_url("playground")
DEFAULT_PAGES = tuple(page_url(p) for p in ("masks", "notations", "multi_head"))
ACTION_WEIGHTS = {"tokens": 4, "causal": 2, "score": 2, "page": 2}
WORDS = ("the cat sat on the mat a dog ran to school we see sky blue attention is very cool query key value "
         "나는 오늘 사과를 먹었다 학교에 간다").split()
FINISHED_EARLY_FOR_RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN
FINISHED_WITH_COMPILE_ERROR = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
ROOT = Path(__file__).resolve().parents[1]
APP_DIR = [ROOT]  # where app.py is served from (--app-dir)
SAMPLE_EVERY = 0.5  # seconds between resource samples
MAX_CACHE = 512  # cached messages a client keeps (the browser keeps a bounded cache too)


# ------------------------------------------------------------------------------------------ a client
@dataclass
class Widget:
    id: str
    key: str
    kind: str  # element type: text_input, checkbox, radio, ... or "tabs"
    proto: object
    fragment_id: str
    labels: list = field(default_factory=list)  # tab labels, for kind == "tabs"


@dataclass
class Run:
    seconds: float
    errors: list  # (kind, detail)
    messages: int
    nbytes: int
    sent: float = 0.0  # time.monotonic() when the BackMsg left


def widget_key(widget_id: str) -> str:
    """``$$ID-<hash>-<key>`` → key (the id itself when it carries no user key)."""
    return widget_id.split("-", 2)[2] if widget_id.startswith("$$ID-") and widget_id.count("-") >= 2 else widget_id


# the app's message for an unexpected failure (ui/page.py: err.unexpected), in every language
UNEXPECTED = {translate("err.unexpected", lang).strip() for lang in LANGS}


def set_value(w: Widget):
    """The value the run itself gave a widget (the scenario's widgets are seeded from their kept value on
    every draw), or None: the run left it as the browser holds it, which tells nothing."""
    p = w.proto
    if not getattr(p, "set_value", False):
        return None
    if w.kind in ("radio", "selectbox"):
        return p.raw_value
    if w.kind in ("checkbox", "text_input"):
        return p.value
    return None


class Client:
    """One Streamlit session over one websocket. One rerun at a time (like a student in one tab)."""

    def __init__(self, url: str, timeout: float):
        self.url, self.timeout = url, timeout
        self.ws = None
        self.widgets: dict[str, Widget] = {}
        self.pages: list[tuple[str, str, str]] = []  # (title, url path, script hash)
        self.page = ""  # url path of the page the last full run drew
        self.query_string = ""
        self.cache: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self.closed = False
        self.unresolved_refs = 0
        self.last_run: dict[str, Widget] = {}  # the widgets the last finished run drew (by id)
        self._pending: asyncio.Future | None = None
        self._run_widgets: dict[str, Widget] = {}
        self._tab_paths: dict[tuple, Widget] = {}
        self._run_fragments: tuple[str, ...] = ()  # the fragments the current run draws (none: a full run)
        self._errors: list = []
        self._msgs = self._bytes = 0
        self._fragment = ""
        self._reader: asyncio.Task | None = None

    async def connect(self) -> None:
        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None, open_timeout=30)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 10)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        self.closed = True

    # ---- reading
    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                self._msgs += 1
                self._bytes += len(raw)
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                if msg.metadata.cacheable and msg.hash:
                    self.cache[msg.hash] = raw
                    self.cache.move_to_end(msg.hash)
                    while len(self.cache) > MAX_CACHE:
                        self.cache.popitem(last=False)
                self._handle(msg)
        except websockets.ConnectionClosed:
            pass
        finally:
            self.closed = True
            if self._pending is not None and not self._pending.done():
                self._pending.set_result(("disconnect", None))

    def _handle(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":
            raw = self.cache.get(msg.ref_hash)
            if raw is None:
                self.unresolved_refs += 1
                return
            cached = ForwardMsg()
            cached.ParseFromString(raw)
            cached.metadata.CopyFrom(msg.metadata)
            self._handle(cached)
        elif kind == "new_session":  # a run starts: a fragment run names its fragments, a full run none
            self._run_fragments = tuple(msg.metadata.run.fragment_ids)
            self._run_widgets, self._tab_paths = {}, {}
            if not self._run_fragments:  # a full run: the page is drawn afresh
                self._fragment = ""
        elif kind == "navigation":
            nav = msg.navigation
            self.pages = [(p.page_name, p.url_pathname, p.page_script_hash) for p in nav.app_pages]
            self.page = next((u for _, u, h in self.pages if h == nav.page_script_hash), self.page)
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "page_not_found":
            self._errors.append(("page_not_found", msg.page_not_found.page_name))
        elif kind == "delta":
            self._delta(msg)
        elif kind == "script_finished":
            status = msg.script_finished
            if status == FINISHED_EARLY_FOR_RERUN:
                return  # the app asked for another run: wait for that one
            if status == FINISHED_WITH_COMPILE_ERROR:
                self._errors.append(("compile_error", ""))
            if self._fragment or self._run_fragments:  # only the fragments that ran were redrawn
                ran = set(self._run_fragments) | ({self._fragment} if self._fragment else set())
                kept = {k: w for k, w in self.widgets.items() if w.fragment_id not in ran}
                self.widgets = {**kept, **self._run_widgets}
            else:
                self.widgets = dict(self._run_widgets)
            self.last_run = dict(self._run_widgets)
            if self._pending is not None and not self._pending.done():
                self._pending.set_result(("finished", status))

    def _delta(self, msg: ForwardMsg) -> None:
        delta, path = msg.delta, tuple(msg.metadata.delta_path)
        which = delta.WhichOneof("type")
        if which == "new_element":
            el = delta.new_element
            et = el.WhichOneof("type")
            if et is None:
                return
            sub = getattr(el, et)
            if et == "exception":
                self._errors.append(("exception", f"{sub.type}: {sub.message}"[:200]))
            elif et == "alert" and sub.format == Alert.ERROR:
                kind = "unexpected" if sub.body.strip() in UNEXPECTED else "error_alert"
                self._errors.append((kind, sub.body[:200]))
            if "id" in sub.DESCRIPTOR.fields_by_name and sub.id:
                self._run_widgets[sub.id] = Widget(sub.id, widget_key(sub.id), et, sub, self._fragment_of(delta))
        elif which == "add_block":
            block = delta.add_block
            bt = block.WhichOneof("type")
            if bt == "tab_container" and block.tab_container.id:
                w = Widget(block.tab_container.id, widget_key(block.tab_container.id), "tabs", block.tab_container,
                           self._fragment_of(delta))
                self._run_widgets[w.id] = w
                self._tab_paths[path] = w
            elif bt == "tab" and path[:-1] in self._tab_paths:
                self._tab_paths[path[:-1]].labels.append(block.tab.label)

    def _fragment_of(self, delta) -> str:
        """The fragment an element belongs to: its delta's, else (a fragment run's deltas may leave
        it out) the innermost fragment of the run — the one a browser would send back."""
        return delta.fragment_id or (self._run_fragments[-1] if self._run_fragments else "")

    # ---- writing
    async def rerun(self, *, page: str | None = None, widgets=(), fragment_id: str = "") -> Run:
        """One rerun: ``page`` (url path) for a page switch, else the current page; ``widgets`` is a
        list of (widget, value field, value). Returns when the run's ``script_finished`` arrives."""
        if self.closed:
            return Run(0.0, [("disconnect", "closed before the rerun")], 0, 0)
        back = BackMsg()
        cs = back.rerun_script
        cs.query_string = self.query_string
        if page is not None:
            cs.page_name = page
            cs.page_script_hash = next((h for _, u, h in self.pages if u == page), "")
        else:
            cs.page_script_hash = next((h for _, u, h in self.pages if u == self.page), "")
        for w, fld, value in widgets:
            state = cs.widget_states.widgets.add()
            state.id = w.id
            if fld == "double_array_value":
                state.double_array_value.data[:] = value
            else:
                setattr(state, fld, value)
        if fragment_id:
            cs.fragment_id = fragment_id
        cs.cached_message_hashes[:] = list(self.cache)
        ctx = cs.context_info  # what a browser reports about itself on every rerun
        ctx.timezone, ctx.timezone_offset, ctx.locale, ctx.color_scheme = "UTC", 0, "en-US", "light"
        ctx.url = self.url.replace("ws://", "http://", 1).replace("/_stcore/stream", "/" + (page or self.page))
        self._errors, self._msgs, self._bytes = [], 0, 0
        self._fragment = fragment_id
        self._run_widgets = {}
        loop = asyncio.get_running_loop()
        self._pending = loop.create_future()
        t0, sent = time.perf_counter(), time.monotonic()
        try:
            await self.ws.send(back.SerializeToString())
            outcome, _ = await asyncio.wait_for(self._pending, self.timeout)
        except asyncio.TimeoutError:
            outcome = "timeout"
        except websockets.ConnectionClosed:
            outcome = "disconnect"
        seconds = time.perf_counter() - t0
        errors = list(self._errors)
        if outcome != "finished":
            errors.append((outcome, f"after {seconds:.1f} s"))
        return Run(seconds, errors, self._msgs, self._bytes, sent)

    def find(self, name: str, widgets: dict[str, Widget] | None = None) -> Widget | None:
        """The widget of WIDGET_KEYS[name] (or of the key ``name``) among those drawn."""
        key = WIDGET_KEYS.get(name, name)
        return next((w for w in (self.widgets if widgets is None else widgets).values() if w.key == key), None)


# ------------------------------------------------------------------------------------------ a student
def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8)))


def radio_value(w: Widget) -> str | None:
    p = w.proto
    if p.set_value and p.raw_value:
        return p.raw_value
    return p.options[p.default] if 0 <= p.default < len(p.options) else None


def checkbox_value(w: Widget) -> bool:
    return w.proto.value if w.proto.set_value else w.proto.default


class Recorder:
    def __init__(self):
        self.times: dict[str, list[float]] = collections.defaultdict(list)
        self.errors: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.samples: list[tuple[str, str]] = []  # a few error details
        self.skipped = collections.Counter()
        self.applied = collections.Counter()  # changes whose result was checked and held the value sent
        self.unapplied = collections.Counter()  # … and did not
        self.unchecked = collections.Counter()  # changes whose widget the run did not redraw
        self.pages = collections.Counter()  # page switches by target
        self.timeline: list[tuple] = []  # (sent, action, seconds, errors, messages, bytes)

    def sample(self, action: str, detail: str) -> None:
        if len(self.samples) < 20:
            self.samples.append((action, detail))

    def add(self, action: str, run: Run) -> None:
        self.times[action].append(run.seconds)
        self.timeline.append((round(run.sent, 3), action, round(run.seconds, 4), len(run.errors), run.messages, run.nbytes))
        for kind, detail in run.errors:
            self.errors[action][kind] += 1
            self.sample(action, f"{kind}: {detail}")


class Student:
    def __init__(self, idx: int, url: str, args, rec: Recorder, rng: random.Random):
        self.idx, self.args, self.rec, self.rng = idx, args, rec, rng
        self.client = Client(url, args.timeout)
        self.tokens: str | None = None  # the tokens this session holds, as last typed or shown
        self.alive = True
        self.label = ""  # prefix of the recorded actions ("with hostile: " in the second lesson of --hostile)

    async def run(self, action: str, *, typed: str | None = None, **kw) -> Run:
        """One rerun, recorded as ``action``; then checked: a page switch lands on its page, and the
        widgets sent hold their new values when the run redraws them (``typed``: the tokens sent)."""
        if "page" in kw:
            self.rec.pages[kw["page"] or "(home)"] += 1
        run = await self.client.rerun(**kw)
        action = self.label + action
        self.rec.add(action, run)
        if any(k in ("timeout", "disconnect") for k, _ in run.errors):
            self.alive = False  # a late script_finished would be taken for the next run's: stop here
            return run
        if kw.get("page") is not None:
            self.applied_if(action, self.client.page == kw["page"], f"on {self.client.page!r}, not {kw['page']!r}")
        for w, fld, value in kw.get("widgets", ()):
            if w.kind != "tabs" and fld != "trigger_value":  # a button click holds no value
                self.check_value(action, w, value)
        self.check_tokens(action, typed, page_switch="page" in kw)
        return run

    def applied_if(self, action: str, ok: bool, detail: str) -> None:
        (self.rec.applied if ok else self.rec.unapplied)[action] += 1
        if not ok:
            self.rec.sample(action, "unapplied: " + detail)

    def check_value(self, action: str, sent: Widget, value) -> None:
        """The widget as the run redrew it holds the value sent (not redrawn: unchecked)."""
        w = self.client.find(sent.key, self.client.last_run)
        shown = set_value(w) if w is not None else None
        if shown is None:
            self.rec.unchecked[action] += 1
            return
        self.applied_if(action, shown == value, f"{sent.key} shows {shown!r}, sent {value!r}")

    def check_tokens(self, action: str, typed: str | None, page_switch: bool) -> None:
        """The same tokens after a page switch (what was typed is checked by check_value). Other
        changes may load new tokens (the example menu): the box is then taken as it is."""
        w = self.client.find("tokens")
        shown = w.proto.value if w is not None and w.proto.set_value else None
        if page_switch and shown is not None and self.tokens is not None and shown != self.tokens:
            self.rec.errors[action]["state"] += 1
            self.rec.sample(action, f"state: token box shows {shown!r}, expected {self.tokens!r}")
        if typed is not None:
            self.tokens = typed
        elif shown is not None:
            self.tokens = shown

    async def open(self, delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            await self.client.connect()
        except (OSError, websockets.WebSocketException, asyncio.TimeoutError) as err:
            self.rec.add("open", Run(0.0, [("connect", repr(err)[:200])], 0, 0, time.monotonic()))
            self.alive = False
            return
        await self.run("open", page=START_PAGE)

    async def ensure(self, name: str) -> Widget | None:
        """The widget, clicking setup tabs until it is drawn (None when no tab draws it)."""
        w = self.client.find(name)
        if w is not None:
            return w
        words = TAB_WORDS.get(name, ())
        tabs = self.client.find("tab")
        if tabs is None:
            return None
        order = sorted(tabs.labels, key=lambda label: not any(x in label.lower() for x in words))
        for label in order:
            if not self.alive:
                return None
            await self.run("tab", widgets=[(tabs, "string_value", label)], fragment_id=tabs.fragment_id)
            w = self.client.find(name)
            if w is not None:
                return w
            tabs = self.client.find("tab")
            if tabs is None:
                return None
        return None

    async def tokens_change(self, action: str = "tokens") -> None:
        w = self.client.find("tokens")
        if w is None:
            self.rec.skipped["tokens: no token box on " + (self.client.page or "?")] += 1
            return
        text = sentence(self.rng)
        await self.run(action, widgets=[(w, "string_value", text)], fragment_id=w.fragment_id, typed=text)

    async def write(self) -> None:
        """The language-model page: one more token (a button click: trigger_value)."""
        if self.client.page != WRITE_PAGE:
            await self.run("page", page=WRITE_PAGE)
        w = self.client.find("write") if self.alive else None
        if w is None or getattr(w.proto, "disabled", False):
            if self.alive:
                self.rec.skipped["write: no enabled button"] += 1
            return
        await self.run("write", widgets=[(w, "trigger_value", True)], fragment_id=w.fragment_id)

    async def scenario_action(self, action: str) -> None:
        if action == "write":
            await self.write()
        elif action == "tokens":
            await self.tokens_change()
        elif action == "page":
            target = self.args.pages_list[self.rng.randrange(len(self.args.pages_list))] \
                if self.client.page == START_PAGE else START_PAGE
            await self.run("page", page=target)
        else:
            if self.client.page != START_PAGE:  # causal / score live on the Playground
                await self.run("page", page=START_PAGE)
            w = await self.ensure(action) if self.alive else None
            if w is None:
                if self.alive:
                    self.rec.skipped[f"{action}: widget not found"] += 1
                return
            if action == "causal":
                value = ("bool_value", not checkbox_value(w))
            else:
                options = [o for o in getattr(w.proto, "options", ()) if o != radio_value(w)]
                if not options:
                    self.rec.skipped[f"{action}: no other option"] += 1
                    return
                value = ("string_value", self.rng.choice(options))
            await self.run(action, widgets=[(w, *value)], fragment_id=w.fragment_id)

    async def poke(self) -> None:
        """Soak: a random page, or a random change of a widget the page drew."""
        pages = self.args.pages_list or [u for _, u, _ in self.client.pages]
        if self.rng.random() < 0.3 or not self.client.widgets:
            target = self.rng.choice([p for p in pages if p != self.client.page] or pages)
            await self.run("page", page=target)
            return
        choices = [(w, v) for w in self.client.widgets.values() if (v := poke_value(w, self.rng)) is not None]
        if not choices:
            self.rec.skipped["poke: nothing to change on " + (self.client.page or "home")] += 1
            return
        w, (fld, value) = self.rng.choice(choices)
        if w.key == WIDGET_KEYS["tokens"]:
            await self.tokens_change("poke:tokens")
            return
        await self.run(f"poke:{w.kind}", widgets=[(w, fld, value)], fragment_id=w.fragment_id)

    async def lesson(self, deadline: float) -> None:
        mix = ACTION_WEIGHTS | ({"write": self.args.write} if self.args.write > 0 else {})
        actions, weights = list(mix), list(mix.values())
        for _ in range(self.args.actions):
            if not self.alive or time.monotonic() >= deadline:
                return
            await asyncio.sleep(self.rng.uniform(*self.args.think))
            try:
                if self.args.soak:
                    await self.poke()
                else:
                    await self.scenario_action(self.rng.choices(actions, weights)[0])
            except Exception as err:  # a fault of this harness, not of the server: shown, and the student stops
                self.rec.add("harness", Run(0.0, [("harness_error", repr(err)[:200])], 0, 0, time.monotonic()))
                self.alive = False


HOSTILE_PAGES = tuple(p for name in ("multi_head", "masks", "score_functions", "transformer_block", "notations")
                      for p in (START_PAGE, page_url(name)))
HOSTILE_TOKENS = 512  # the largest scenario the token box takes


class Hostile(Student):
    """A student who sends the largest inputs back to back: 512 new tokens (never the same twice, so no
    cache helps) on the Playground, then a page that computes on them (the scenario is shared), and so
    on round the pages, without thinking, until the lesson's deadline or ``stop`` is set."""

    async def attack(self, deadline: float, stop: asyncio.Event) -> None:
        i = 0
        while self.alive and not stop.is_set() and time.monotonic() < deadline:
            page = HOSTILE_PAGES[i % len(HOSTILE_PAGES)]
            i += 1
            try:
                if page != self.client.page:
                    await self.run("hostile: page", page=page)
                w = self.client.find("tokens") if page == START_PAGE else None
                if w is not None:
                    text = " ".join(self.rng.choice(WORDS) + str(self.rng.randrange(10**6)) for _ in range(HOSTILE_TOKENS))
                    await self.run("hostile: 512 tokens", widgets=[(w, "string_value", text)],
                                   fragment_id=w.fragment_id, typed=text)
            except Exception as err:  # a fault of this harness
                self.rec.add("harness", Run(0.0, [("harness_error", repr(err)[:200])], 0, 0, time.monotonic()))
                self.alive = False


async def hostile_lesson(students: list[Student], url: str, args, rec: Recorder, rng: random.Random,
                         mon: Monitor) -> dict:
    """The same lesson again, on the same server, with ``--hostile`` hostile clients among the students:
    the students' actions are recorded as "with hostile: …" beside the first lesson's."""
    hostiles = [Hostile(1000 + i, url, args, rec, random.Random(rng.random())) for i in range(args.hostile)]
    for h in hostiles:
        await h.open(0.0)
    for s in students:
        s.label = "with hostile: "
    stop = asyncio.Event()
    deadline = time.monotonic() + args.duration
    mon.mark("hostile")
    attacks = [asyncio.get_running_loop().create_task(h.attack(deadline, stop)) for h in hostiles]
    await asyncio.gather(*(s.lesson(deadline) for s in students))
    stop.set()
    await asyncio.gather(*attacks)
    mon.mark("hostile_end")
    for s in students:
        s.label = ""
    await asyncio.gather(*(h.client.close() for h in hostiles))
    return mon.window("hostile", "hostile_end")


def students_p95(actions: dict, prefix: str) -> tuple[int, float, float]:
    """(count, median, p95) of every student action of one lesson (hostile clients and warm-up left out)."""
    times = [t for a, v in actions.items() for t in v if a.startswith(prefix) and not a.startswith("hostile")
             and a not in ("warm-up", "harness", "open") and (prefix or not a.startswith("with hostile"))]
    return len(times), statistics.median(times) if times else float("nan"), pct(times, 95)


def poke_value(w: Widget, rng: random.Random):
    """(value field, new value) for a widget the soak may change, or None."""
    p = w.proto
    if getattr(p, "disabled", False) or getattr(p, "form_id", ""):
        return None
    if w.kind == "text_input":
        return ("string_value", sentence(rng)) if w.key == WIDGET_KEYS["tokens"] else None
    if w.kind in ("radio", "selectbox"):
        options = [o for o in p.options if o != radio_value(w)]
        return ("string_value", rng.choice(options)) if options else None
    if w.kind == "checkbox":
        return "bool_value", not checkbox_value(w)
    if w.kind == "slider" and not p.options and p.data_type in (p.INT, p.FLOAT):
        current = list(p.value if p.set_value else p.default)
        if len(current) != 1 or p.step <= 0:
            return None
        new = min(p.max, max(p.min, current[0] + rng.choice((-1, 1)) * p.step))
        return ("double_array_value", [new]) if new != current[0] else None
    if w.kind == "number_input":
        current = p.value if p.set_value else p.default
        step = p.step or 1.0
        new = current + rng.choice((-1, 1)) * step
        if (p.has_min and new < p.min) or (p.has_max and new > p.max):
            new = current - (new - current)
        if (p.has_min and new < p.min) or (p.has_max and new > p.max):
            return None
        return "double_value", float(int(new) if p.data_type == p.INT else new)
    return None


# ------------------------------------------------------------------------------------------ the server
def metrics(port: int) -> dict:
    """Streamlit's own /_stcore/metrics (OpenMetrics text): the session gauge and counters."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(active_sessions|session_events_total\{type="(\w+)"\})\s+(\S+)', line)
        if m:
            out["active_sessions" if m.group(1) == "active_sessions" else f"session_{m.group(2)}s"] = int(float(m.group(3)))
    return out


# ---- process statistics (psutil)
def rss_bytes(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def tree_pss(pid: int) -> int:
    """The proportional set size of a process and all its children, summed: memory shared between them (the
    language model's weights, mapped by the server and its decoding process) counted once."""
    total = 0
    root = psutil.Process(pid)
    for p in [root, *root.children(recursive=True)]:
        try:
            total += p.memory_full_info().pss
        except psutil.Error:  # a child that ended between the listing and the reading
            pass
    return total


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, summed over cores."""
    c = psutil.cpu_times()  # guest time is counted in user time already: left out
    total = sum(getattr(c, f, 0.0) for f in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"))
    return total - c.idle - getattr(c, "iowait", 0.0), total


def tcp_established(pid: int, port: int) -> int:
    """Established TCP connections whose local end is the server's port."""
    return sum(1 for c in psutil.Process(pid).net_connections(kind="tcp")
               if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED)


def main_thread_cpu(pid: int) -> float:
    """CPU seconds of a process's main thread (its thread id is the process id)."""
    try:
        return next((t.user_time + t.system_time for t in psutil.Process(pid).threads() if t.id == pid), 0.0)
    except psutil.Error:
        return 0.0


class Monitor:
    """Samples the server's RSS and CPU, the machine's CPU and this harness's CPU every 0.5 s; with ``tree``, also
    the PSS of the server and its child processes (``tree_pss``)."""

    def __init__(self, pid: int, tree: bool = False):
        self.pid, self.tree = pid, tree
        self.samples: list[dict] = []
        self.marks: dict[str, int] = {}  # phase name → sample index
        self._task: asyncio.Task | None = None

    def sample(self) -> dict:
        busy, total = machine_cpu()
        t = os.times()
        s = {"t": time.monotonic(), "rss": rss_bytes(self.pid), "cpu": cpu_seconds(self.pid), "busy": busy,
             "total": total, "self": t.user + t.system, "main": main_thread_cpu(self.pid)}
        if self.tree:
            s["tree"] = tree_pss(self.pid)
        self.samples.append(s)
        return s

    def mark(self, name: str) -> None:
        self.sample()
        self.marks[name] = len(self.samples) - 1

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(SAMPLE_EVERY)
            self.sample()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    def window(self, a: str, b: str) -> dict:
        """CPU use between two marks, in cores (1.0 = one core busy): server (all threads, and its main
        thread: the event loop that reads and writes the websockets), harness, whole machine."""
        s = self.samples[self.marks[a]: self.marks[b] + 1]
        x, y = s[0], s[-1]
        wall = (y["t"] - x["t"]) or 1e-9
        peak = max(((v["cpu"] - u["cpu"]) / (v["t"] - u["t"]) for u, v in zip(s, s[1:], strict=False)
                    if v["t"] - u["t"] > 0.2), default=0.0)
        total = (y["total"] - x["total"]) or 1e-9
        return {"seconds": wall, "server_cpu_s": y["cpu"] - x["cpu"], "server_cores": (y["cpu"] - x["cpu"]) / wall,
                "server_cores_peak": peak, "server_main_thread_cores": (y["main"] - x["main"]) / wall,
                "harness_cores": (y["self"] - x["self"]) / wall,
                "machine_cores_busy": (y["busy"] - x["busy"]) / total * (os.cpu_count() or 1),
                "rss_peak": max(v["rss"] for v in s)}


# ------------------------------------------------------------------------------------------ the run
def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def warm_up(url: str, args, rec: Recorder) -> None:
    """One session opens the Playground and the pages of --pages, so imports and caches are warm (its runs
    are reported as "warm-up": the first session on a fresh server is the one that meets cold-start bugs)."""
    c = Client(url, 180)
    await c.connect()
    rec.add("warm-up", await c.rerun(page=START_PAGE))
    for p in args.pages_list[:3]:
        rec.add("warm-up", await c.rerun(page=p))
    await c.close()


async def burst(students: list[Student], rec: Recorder, rng: random.Random) -> dict:
    """Every live student on the Playground, then all change the tokens within one second."""
    live = [s for s in students if s.alive]
    await asyncio.gather(*(s.run("page", page=START_PAGE) for s in live if s.client.page != START_PAGE))
    live = [s for s in live if s.alive and s.client.find("tokens") is not None]
    if not live:
        return {}
    sends: list[float] = []
    ends: list[float] = []

    async def one(s: Student) -> None:
        await asyncio.sleep(rng.uniform(0.0, 1.0))
        sends.append(time.perf_counter())
        await s.tokens_change("burst")
        ends.append(time.perf_counter())

    await asyncio.gather(*(one(s) for s in live))
    times = rec.times["burst"][-len(live):]
    return {"sessions": len(live), "all_served_s": max(ends) - min(sends), "sent_within_s": max(sends) - min(sends),
            "median_s": statistics.median(times),
            "p95_s": pct(times, 95), "max_s": max(times)}


async def classroom(args) -> dict:
    rng = random.Random(args.seed)
    port = args.port or serve.free_port()
    log_path = Path(tempfile.gettempdir()) / f"classroom-server-{port}.log"
    t_start = time.monotonic()
    server = serve.start(port=port, log=log_path, cwd=APP_DIR[0], env=dict(kv.split("=", 1) for kv in args.server_env))
    url, proc = server.ws_url, server.proc
    rec = Recorder()
    result: dict = {"port": port, "server_log": str(log_path)}
    try:
        server.wait(120)
        mon = Monitor(proc.pid)
        mon.mark("cold")
        args.pages_list = args.pages_list if args.pages_list is not None else list(DEFAULT_PAGES)
        await warm_up(url, args, rec)
        await asyncio.sleep(1.0)
        mon.mark("start")
        result["t_start_mono"] = mon.samples[-1]["t"]
        mon.start()
        students = [Student(i, url, args, rec, random.Random(rng.random())) for i in range(args.sessions)]
        await asyncio.gather(*(s.open(args.ramp * i / max(1, args.sessions)) for i, s in enumerate(students)))
        result["metrics_connected"] = metrics(port)
        result["tcp_connected"] = tcp_established(proc.pid, port)
        deadline = time.monotonic() + args.duration
        mon.mark("lesson")
        await asyncio.gather(*(s.lesson(deadline) for s in students))
        mon.mark("lesson_end")
        if args.hostile:  # then, in turns: a lesson with the hostile clients, one without, … (load drifts)
            result["hostile"] = await hostile_lesson(students, url, args, rec, rng, mon)
            for _ in range(args.hostile_rounds - 1):
                deadline = time.monotonic() + args.duration
                await asyncio.gather(*(s.lesson(deadline) for s in students))
                result["hostile"] = max(result["hostile"], await hostile_lesson(students, url, args, rec, rng, mon),
                                        key=lambda w: w["rss_peak"])
        if not args.soak:
            mon.mark("burst")
            result["burst"] = await burst(students, rec, rng)
            mon.mark("burst_end")
        await asyncio.gather(*(s.client.close() for s in students))
        await asyncio.sleep(args.linger)
        mon.mark("end")
        await mon.stop()
        result["metrics_after"] = metrics(port)
        result["tcp_after"] = tcp_established(proc.pid, port)
        result["lesson"] = mon.window("lesson", "lesson_end")
        result["lesson_window"] = tuple(mon.samples[mon.marks[k]]["t"] for k in ("lesson", "lesson_end"))
        result["all"] = mon.window("start", "end")
        if "burst" in mon.marks:
            result["burst_cpu"] = mon.window("burst", "burst_end")
        result["rss"] = {k: mon.samples[mon.marks[k]]["rss"] for k in ("cold", "start", "end")}
        result["rss"]["peak"] = max(x["rss"] for x in mon.samples)
        if args.soak:  # RSS per minute, to see growth
            t0 = mon.samples[mon.marks["start"]]["t"]
            per_min: dict[int, int] = {}
            for x in mon.samples[mon.marks["start"]:]:
                per_min[int((x["t"] - t0) // 60)] = x["rss"]
            result["rss_per_minute"] = per_min
        result["client_rss"] = rss_bytes(os.getpid())
        result["unresolved_refs"] = sum(s.client.unresolved_refs for s in students)
        result["sessions_alive_at_end"] = sum(s.alive for s in students)
        result["sessions"] = len(students)
        if args.probe_chromium:
            # sync Playwright may not run inside this event loop: a worker thread has none
            result["chromium"] = await asyncio.to_thread(probe_chromium, port, proc.pid)
    finally:
        server.stop()
    log = log_path.read_text(errors="replace")
    result["server_log_tracebacks"] = log.count("Traceback (most recent call last)")
    result["fair_share_waits"] = log.count("fair share: a session waited")  # serving/fair.py's line per held-back run
    result["wall_s"] = time.monotonic() - t_start
    result["actions"] = {a: {"n": len(v), "median_s": statistics.median(v), "p95_s": pct(v, 95), "max_s": max(v),
                             "errors": dict(rec.errors.get(a, {}))} for a, v in sorted(rec.times.items())}
    if args.hostile:
        result["students_without"] = students_p95(rec.times, "")
        result["students_with"] = students_p95(rec.times, "with hostile: ")
    result["errors_total"] = sum(sum(c.values()) for c in rec.errors.values())
    result["error_samples"] = rec.samples
    result["skipped"] = dict(rec.skipped)
    result["applied"], result["unapplied"] = dict(rec.applied), dict(rec.unapplied)
    result["unchecked"] = dict(rec.unchecked)
    result["pages_visited"] = dict(rec.pages)
    t0 = result.pop("t_start_mono")
    result["timeline"] = [(round(x[0] - t0, 3), *x[1:]) for x in sorted(rec.timeline)]
    a, b = result.pop("lesson_window")
    reruns = [x for x in rec.timeline if a <= x[0] <= b]
    result["lesson"]["server_cpu_per_rerun_ms"] = result["lesson"]["server_cpu_s"] / max(1, len(reruns)) * 1e3
    result["messages_per_rerun"] = statistics.median([x[4] for x in rec.timeline]) if rec.timeline else 0
    result["kib_per_rerun"] = statistics.median([x[5] for x in rec.timeline]) / 1024 if rec.timeline else 0
    return result


def probe_chromium(port: int, server_pid: int) -> dict:
    """What one headless Chromium page on the Playground costs: memory (PSS and RSS of all the browser's
    processes), the memory a second page adds, and the CPU the browser spends on one token change."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as err:
        return {"skipped": f"playwright not importable: {err}"}
    exe = serve.chromium()
    if not exe:
        return {"skipped": "no chromium"}

    def tree() -> tuple[int, int, float, int]:
        procs = [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name()]
        pss = rss = cpu = 0.0
        for p in procs:
            try:
                with p.oneshot():
                    mem, times = p.memory_full_info(), p.cpu_times()
            except psutil.Error:  # a helper process ended meanwhile
                continue
            pss, rss, cpu = pss + getattr(mem, "pss", 0), rss + mem.rss, cpu + times.user + times.system
        return int(pss), int(rss), cpu, len(procs)

    idle = '[data-testid="stApp"][data-test-script-state="notRunning"]'
    # the update is drawn when every heatmap of the pipeline (the app's component keeps its values on its
    # root, in a shadow root) shows n rows: found without widget keys, which get renamed
    weights = ("(n) => { const z = Array.from(document.querySelectorAll('[data-testid=stBidiComponentIsolated]'))"
               ".map(h => h.shadowRoot && h.shadowRoot.querySelector('.alhm')).filter(r => r && r.dataset.z)"
               ".map(r => JSON.parse(r.dataset.z).length); return z.length >= 2 && z.every(m => m === n); }")
    out: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=serve.CHROMIUM_ARGS)
        try:
            base = tree()
            pages = []
            for i in range(2):
                ctx = browser.new_context(viewport={"width": 1500, "height": 1200})
                page = ctx.new_page()
                page.goto(f"http://127.0.0.1:{port}/Playground")
                page.wait_for_selector(idle, timeout=120_000)
                page.wait_for_function(weights, arg=4, timeout=120_000)
                time.sleep(1.0)
                pages.append(page)
                out[f"after_page_{i + 1}"] = tree()
            box = pages[0].get_by_role("textbox", name=re.compile(r"^Tokens"))  # by its label: keys get renamed
            cpu_b, cpu_s, t0 = tree()[2], cpu_seconds(server_pid), time.perf_counter()
            box.fill("a b c d e f g")
            box.press("Enter")
            pages[0].wait_for_function(weights, arg=7, timeout=60_000)
            pages[0].wait_for_selector(idle, timeout=60_000)
            out["change_s"] = time.perf_counter() - t0
            out["change_browser_cpu_s"] = tree()[2] - cpu_b
            out["change_server_cpu_s"] = cpu_seconds(server_pid) - cpu_s
        finally:
            browser.close()
    out["browser_only"] = base
    one, two = out["after_page_1"], out["after_page_2"]
    out["one_page_pss"], out["one_page_rss"], out["processes_one_page"] = one[0], one[1], one[3]
    out["extra_page_pss"] = two[0] - one[0]
    return out


# ------------------------------------------------------------------------------------------ report
def mib(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def ms(s: float) -> str:
    return f"{s * 1e3:.0f} ms" if s < 10 else f"{s:.1f} s"


def machine() -> str:
    mem = psutil.virtual_memory().total
    import streamlit

    return (f"{platform.machine()}, {os.cpu_count()} CPU cores, {mem / 2**30:.0f} GiB RAM; Python "
            f"{platform.python_version()}, Streamlit {streamlit.__version__}, websockets {websockets.__version__}")


def report(args, r: dict) -> str:
    kind = "websocket protocol clients (one asyncio loop, `websockets`)"
    mode = f"soak {args.soak:g} min" if args.soak else f"{args.actions} actions max, {args.duration:g} s max"
    lines = [f"**{machine()}**; {r['date']}; client: {kind}; N = {args.sessions} ({mode}, think "
             f"{args.think[0]:g}–{args.think[1]:g} s, pages {', '.join(args.pages_list) or 'all'})"
             + (f"; server environment: {' '.join(args.server_env)}" if args.server_env else ""), "",
             "| N | action | count | median | p95 | max | errors |", "|---|---|---|---|---|---|---|"]
    for a, v in r["actions"].items():
        errs = ", ".join(f"{k} {n}" for k, n in v["errors"].items()) or "0"
        lines.append(f"| {args.sessions} | {a} | {v['n']} | {ms(v['median_s'])} | {ms(v['p95_s'])} | {ms(v['max_s'])} | {errs} |")
    b = r.get("burst")
    if b:
        lines.append(f"| {args.sessions} | **burst**: {b['sessions']} token changes sent within 1 s | {b['sessions']} | "
                     f"{ms(b['median_s'])} | {ms(b['p95_s'])} | {ms(b['max_s'])} | sent within {ms(b['sent_within_s'])}; all "
                     f"served {ms(b['all_served_s'])} after the first send |")
    rss, les = r["rss"], r["lesson"]
    lines += ["", "| N | server RSS cold / start / peak / end | server CPU (lesson: mean / peak 0.5 s; main thread) | "
              "server CPU per rerun | machine CPU busy (all processes) | harness CPU | errors | server tracebacks |",
              "|---|---|---|---|---|---|---|---|",
              f"| {args.sessions} | {mib(rss['cold'])} / {mib(rss['start'])} / {mib(rss['peak'])} / {mib(rss['end'])} | "
              f"{les['server_cores']:.2f} / {les['server_cores_peak']:.2f} cores; {les['server_main_thread_cores']:.2f} | "
              f"{les['server_cpu_per_rerun_ms']:.0f} ms ({r['messages_per_rerun']:.0f} messages, "
              f"{r['kib_per_rerun']:.0f} KiB) | {les['machine_cores_busy']:.2f} of "
              f"{os.cpu_count()} cores | {les['harness_cores']:.2f} cores, {mib(r['client_rss'])} | {r['errors_total']} | "
              f"{r['server_log_tracebacks']} |"]
    if "students_with" in r:
        (n0, m0, p0), (n1, m1, p1), h = r["students_without"], r["students_with"], r["hostile"]
        lines.append(f"\n**hostile client** ({args.hostile} sending {HOSTILE_TOKENS} new tokens and pages back to back): "
                     f"{args.hostile_rounds} lessons without it and {args.hostile_rounds} with it in turns, same server; "
                     f"the students' actions without it: n = {n0}, median {ms(m0)}, p95 {ms(p0)}; "
                     f"with it: n = {n1}, median {ms(m1)}, p95 {ms(p1)} — p95 ×{p1 / p0:.2f}; server RSS peak "
                     f"during the hostile lesson {mib(h['rss_peak'])}, overall peak {mib(rss['peak'])}; server "
                     f"{h['server_cores']:.2f} cores mean; runs held back by the fair share (serving/fair.py): "
                     f"{r.get('fair_share_waits', 0)}")
    if "burst_cpu" in r:
        bc = r["burst_cpu"]
        lines.append(f"\nburst: server {bc['server_cores']:.2f} cores mean over {bc['seconds']:.1f} s, "
                     f"machine {bc['machine_cores_busy']:.2f} cores busy")
    ma, mc = r["metrics_after"], r["metrics_connected"]
    lines.append(f"\nsessions: while connected /_stcore/metrics active_sessions = {mc.get('active_sessions')}, "
                 f"{r['tcp_connected']} established TCP connections to port {r['port']}; {args.linger:g} s after all "
                 f"clients closed: active_sessions = {ma.get('active_sessions')} (connects {ma.get('session_connects')}, "
                 f"disconnects {ma.get('session_disconnects')}, warm-up session included), established TCP = "
                 f"{r['tcp_after']}")
    if "rss_per_minute" in r:
        lines.append("\nserver RSS by minute: " + ", ".join(f"{k}: {mib(v)}" for k, v in sorted(r["rss_per_minute"].items())))
    lines.append("\npages opened (open and switches): " + ", ".join(f"{p} ×{n}" for p, n in sorted(r["pages_visited"].items())))
    lines.append("\nchanges checked: " + (", ".join(f"{k} ×{n}" for k, n in sorted(r["applied"].items())) or "none")
                 + "; unapplied: " + (", ".join(f"{k} ×{n}" for k, n in sorted(r["unapplied"].items())) or "none")
                 + "; not redrawn by their run (unchecked): "
                 + (", ".join(f"{k} ×{n}" for k, n in sorted(r["unchecked"].items())) or "none"))
    if r["skipped"]:
        lines.append("\nskipped: " + "; ".join(f"{k} ×{n}" for k, n in r["skipped"].items()))
    if r["error_samples"]:
        lines.append("\nerror samples: " + "; ".join(f"{a}: {d}" for a, d in r["error_samples"][:5]))
    if r.get("chromium"):
        c = r["chromium"]
        if "skipped" in c:
            lines.append(f"\nChromium probe skipped: {c['skipped']}")
        else:
            lines.append(f"\nheadless Chromium (same machine): one Playground page = {mib(c['one_page_pss'])} PSS "
                         f"({mib(c['one_page_rss'])} RSS summed over {c['processes_one_page']} processes), each further "
                         f"page +{mib(c['extra_page_pss'])} PSS; one token change costs the browser "
                         f"{c['change_browser_cpu_s'] * 1e3:.0f} ms CPU and the server {c['change_server_cpu_s'] * 1e3:.0f} ms "
                         f"({ms(c['change_s'])} wall)")
    lines.append(f"\n(wall {r['wall_s']:.0f} s; server log {r['server_log']}; numbers are noisy: other processes "
                 "share these cores, see the machine CPU column)")
    return "\n".join(lines)


def problems(r: dict) -> list[str]:
    """What makes a run fail with --strict: skipped or unapplied actions, errors, server tracebacks,
    sessions lost, cache references the client could not resolve."""
    out = [f"skipped: {k} ×{n}" for k, n in r["skipped"].items()]
    out += [f"unapplied: {k} ×{n}" for k, n in r["unapplied"].items()]
    if r["errors_total"]:
        out.append(f"{r['errors_total']} errors: " + "; ".join(f"{a}: {d}" for a, d in r["error_samples"][:5]))
    if r["server_log_tracebacks"]:
        out.append(f"{r['server_log_tracebacks']} tracebacks in the server log {r['server_log']}")
    if r["sessions_alive_at_end"] < r["sessions"]:
        out.append(f"{r['sessions'] - r['sessions_alive_at_end']} of {r['sessions']} sessions stopped early")
    if r["unresolved_refs"]:
        out.append(f"{r['unresolved_refs']} cached messages the clients could not resolve")
    return out


def parse(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.classroom", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=None, help="concurrent sessions (default 40; 10 with --soak)")
    ap.add_argument("--actions", type=int, default=None, help="actions per session (default 5; unbounded by count "
                                                                 "in soak mode except by time)")
    ap.add_argument("--duration", type=float, default=None, help="seconds of actions at most (default 300)")
    ap.add_argument("--think", type=float, nargs=2, default=(1.0, 3.0), metavar=("MIN", "MAX"))
    ap.add_argument("--pages", default=None, help="comma-separated url paths for page switches (default "
                                                  f"{','.join(DEFAULT_PAGES)}; every page with --soak)")
    ap.add_argument("--soak", type=float, default=0.0, metavar="MINUTES")
    ap.add_argument("--write", type=float, default=0.0, metavar="W",
                    help="weight of the 'write one token' action on the language-model page (default 0: off)")
    ap.add_argument("--ramp", type=float, default=3.0, help="seconds over which the sessions open the page")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a rerun may take before it counts as failed")
    ap.add_argument("--linger", type=float, default=3.0, help="seconds after disconnecting before counting sessions")
    ap.add_argument("--port", type=int, default=0, help="server port (default: a free one)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--app-dir", type=Path, default=ROOT, help="serve app.py from this directory (default: this "
                                                                 "checkout; e.g. a `git archive HEAD` snapshot)")
    ap.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment for the server (repeatable), e.g. OMP_NUM_THREADS=1")
    ap.add_argument("--probe-chromium", action="store_true", help="also measure one headless Chromium page")
    ap.add_argument("--hostile", type=int, default=0, metavar="N", help="then the same lesson again with N hostile "
                    "clients (512 new tokens and pages back to back); reports the students' p95 without / with")
    ap.add_argument("--hostile-rounds", type=int, default=2, metavar="R", help="lessons without / with the hostile "
                    "clients, in turns, R of each (default 2)")
    ap.add_argument("--json", type=Path, default=None, help="write every number to this file")
    ap.add_argument("--strict", action="store_true", help="exit with 1 when an action was skipped or not applied, "
                    "or anything failed (the smoke test's check)")
    args = ap.parse_args(argv)
    if args.sessions is None:
        args.sessions = 10 if args.soak else 40
    if args.soak:
        args.duration = args.soak * 60 if args.duration is None else args.duration
        # bounded anyway: no more actions than the think time allows
        args.actions = args.actions or int(args.duration / max(args.think[0], 0.1)) + 1
    args.duration = 300.0 if args.duration is None else args.duration
    args.actions = 5 if args.actions is None else args.actions
    args.pages_list = [p.strip() for p in args.pages.split(",") if p.strip()] if args.pages else (
        [] if args.soak else None)
    if not 1 <= args.sessions <= 200:
        ap.error("--sessions must be 1..200")
    if any("=" not in kv for kv in args.server_env):
        ap.error("--server-env takes KEY=VALUE")
    if args.think[0] < 0 or args.think[1] < args.think[0]:
        ap.error("--think MIN MAX with 0 <= MIN <= MAX")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    APP_DIR[0] = args.app_dir.resolve()
    date = datetime.datetime.now().astimezone().isoformat(timespec="minutes")
    result = asyncio.run(classroom(args))
    result["date"] = date
    print(report(args, result))
    if args.json:
        result["args"] = {k: v for k, v in vars(args).items() if k != "json"}
        args.json.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    failed = problems(result)
    if args.strict and failed:
        print("\nFAILED (--strict): " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
