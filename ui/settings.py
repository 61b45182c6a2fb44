"""The sidebar settings every page shares — language, seed, device, precision — kept across
reruns and page switches, and mirrored into the URL so a shared link keeps them.

Cross-page settings live in plain session state (``ui.state.setting``): widget state is per
page, so each run's sidebar widget is seeded from them and copies its value back on change.
"""

from __future__ import annotations

import streamlit as st

from core import available_devices

from . import state
from .i18n import LANG_NAMES, LANGS, t

DEFAULTS = {"lang": "en", "seed": 0, "device": "cpu", "precision": 3, "contrast": 0}
SEED_MAX = 2**31 - 1
PREC_RANGE = (1, 6)
URL_KEYS = {"lang": "lang", "seed": "seed", "device": "dev", "precision": "prec", "contrast": "hc"}


def _browser_lang() -> str:
    try:
        locale = (st.context.locale or "").lower()
    except Exception:  # no browser (AppTest)
        locale = ""
    return "ko" if locale.startswith("ko") else "en"


def _parse(name: str, raw: str):
    """One setting from the URL, validated; None when invalid."""
    if name == "lang":
        return raw if raw in LANGS else None
    if name == "device":
        return raw if raw in available_devices() else None
    try:
        val = int(raw)
    except (TypeError, ValueError):
        return None
    if name == "seed":
        return val if 0 <= val <= SEED_MAX else None
    if name == "contrast":
        return val if val in (0, 1) else None
    return val if PREC_RANGE[0] <= val <= PREC_RANGE[1] else None


def init() -> list[str]:
    """First run of a session: settings from the URL (validated), else defaults. Returns the URL
    names that were refused."""
    if st.session_state.get(state.SETTINGS._init):
        return []
    refused = []
    for name, default in DEFAULTS.items():
        raw = st.query_params.get(URL_KEYS[name])
        val = None if raw is None else _parse(name, raw)
        if raw is not None and val is None:
            refused.append(URL_KEYS[name])
        if val is None:
            val = _browser_lang() if name == "lang" else default
        st.session_state[state.setting(name)] = val
    st.session_state[state.SETTINGS._init] = True
    return refused


def get(name: str):
    return st.session_state.get(state.setting(name), DEFAULTS[name])


def _copy_back(name: str) -> None:
    value = st.session_state[state.setting_widget(name)]
    st.session_state[state.setting(name)] = int(value) if name == "contrast" else value


def _widget(name: str, factory, **kwargs):
    key = state.setting_widget(name)
    st.session_state[key] = bool(get(name)) if name == "contrast" else get(name)
    return factory(key=key, on_change=_copy_back, args=(name,), **kwargs)


def sidebar() -> None:
    """The settings under the navigation."""
    with st.sidebar:
        st.markdown(f"**{t('settings.title')}**")
        _widget("lang", st.radio, label=t("settings.lang"), options=list(LANGS),
                format_func=lambda c: LANG_NAMES[c], horizontal=True)
        _widget("seed", st.number_input, label=t("settings.seed"), min_value=0, max_value=SEED_MAX, step=1,
                help=t("settings.seed.help"))
        if get("device") not in available_devices():
            st.session_state[state.setting("device")] = "cpu"
        _widget("device", st.selectbox, label=t("settings.device"), options=available_devices(),
                help=t("settings.device.help"))
        _widget("precision", st.slider, label=t("settings.precision"), min_value=PREC_RANGE[0],
                max_value=PREC_RANGE[1], help=t("settings.precision.help"))
        _widget("contrast", st.toggle, label=t("settings.contrast"), help=t("settings.contrast.help"))


def query() -> dict[str, str]:
    """The settings as URL parameters (high contrast only when it is on: old links stay as they were)."""
    return {URL_KEYS[n]: str(get(n)) for n in DEFAULTS if n != "contrast" or get(n)}


def presenting() -> bool:
    """Whether this session shows the presenter view (:mod:`ui.presenter` opens and closes it; the maps ask here)."""
    return bool(st.session_state.get(state.FRAME.present))
