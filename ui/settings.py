"""Page setup shared by every page: page config, the translated navigation and the sidebar
settings (language, seed, device, precision) that survive reruns and page switches.

Cross-page settings live in ``st.session_state`` under non-widget keys (``settings.*``):
widget state is per page, so each page's sidebar widget is seeded from them and copies its
value back in ``on_change``. They are mirrored into the URL so a shared link keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core import available_devices

from .i18n import LANG_NAMES, LANGS, t
from .render import inject_css


@dataclass(frozen=True)
class PageInfo:
    id: str
    path: str
    icon: str
    curriculum: str  # ids covered, e.g. "C1–C2, C4–C9"


PAGES = (
    PageInfo("home", "app.py", ":material/home:", "C1, C2, C4"),
    PageInfo("playground", "pages/1_Playground.py", ":material/tune:",
             "C1–C2, C4–C9, C11, C13–C16, C18–C19, C33, C39"),
    PageInfo("notations", "pages/2_Notations.py", ":material/swap_horiz:", "C1, C2, C11, C34"),
    PageInfo("scores", "pages/3_Score_functions.py", ":material/functions:", "C3, C5–C10, C19, C40"),
    PageInfo("masks", "pages/4_Masks.py", ":material/grid_on:", "C11, C12, C35, C39"),
    PageInfo("multihead", "pages/5_Multi-head.py", ":material/view_column:", "C17, C20–C22, C36, C38"),
    PageInfo("selfcross", "pages/6_Self_vs_cross.py", ":material/compare_arrows:", "C13–C16"),
    PageInfo("position", "pages/7_Position.py", ":material/format_list_numbered:", "C23, C24, C37"),
    PageInfo("seq2seq", "pages/8_Seq2seq.py", ":material/translate:", "C25–C27"),
    PageInfo("block", "pages/9_Transformer_block.py", ":material/layers:", "C28–C31"),
    PageInfo("vit", "pages/10_Vision_Transformer.py", ":material/image:", "C32"),
)
PAGE_BY_ID = {p.id: p for p in PAGES}

DEFAULTS = {"lang": "en", "seed": 0, "device": "cpu", "precision": 3}
SEED_MAX = 2**31 - 1
PREC_RANGE = (1, 6)


def _browser_lang() -> str:
    try:
        locale = (st.context.locale or "").lower()
    except Exception:  # older Streamlit or no browser (AppTest)
        locale = ""
    return "ko" if locale.startswith("ko") else "en"


def _parse_setting(name: str, raw: str):
    """Validate one setting from the URL; None when invalid."""
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
    if name == "precision":
        return val if PREC_RANGE[0] <= val <= PREC_RANGE[1] else None
    return None


URL_KEYS = {"lang": "lang", "seed": "seed", "device": "dev", "precision": "prec"}


def init_settings() -> list[str]:
    """First run of a session: settings from the URL (validated), else defaults. Returns the
    names of URL values that were refused."""
    refused = []
    if st.session_state.get("settings._init"):
        return refused
    for name, default in DEFAULTS.items():
        raw = st.query_params.get(URL_KEYS[name])
        val = None if raw is None else _parse_setting(name, raw)
        if raw is not None and val is None:
            refused.append(URL_KEYS[name])
        if val is None:
            val = _browser_lang() if name == "lang" else default
        st.session_state[f"settings.{name}"] = val
    st.session_state["settings._init"] = True
    return refused


def get(name: str):
    return st.session_state.get(f"settings.{name}", DEFAULTS[name])


def _copy_back(name: str) -> None:
    st.session_state[f"settings.{name}"] = st.session_state[f"_w.settings.{name}"]


def _widget(name: str, factory, **kwargs):
    key = f"_w.settings.{name}"
    st.session_state[key] = get(name)
    return factory(key=key, on_change=_copy_back, args=(name,), **kwargs)


def sidebar() -> None:
    sb = st.sidebar
    with sb:
        st.markdown(f"### {t('app.title')}")
        for p in PAGES:
            st.page_link(p.path, label=t(f"page.{p.id}.title"), icon=p.icon, query_params=settings_query())
        st.divider()
        st.markdown(f"**{t('settings.title')}**")
        _widget("lang", st.radio, label=t("settings.lang"), options=list(LANGS),
                format_func=lambda c: LANG_NAMES[c], horizontal=True)
        _widget("seed", st.number_input, label=t("settings.seed"), min_value=0, max_value=SEED_MAX, step=1,
                help=t("settings.seed.help"))
        devices = available_devices()
        if get("device") not in devices:
            st.session_state["settings.device"] = "cpu"
        _widget("device", st.selectbox, label=t("settings.device"), options=devices, help=t("settings.device.help"))
        _widget("precision", st.slider, label=t("settings.precision"), min_value=PREC_RANGE[0],
                max_value=PREC_RANGE[1], help=t("settings.precision.help"))


def settings_query() -> dict[str, str]:
    return {URL_KEYS[n]: str(get(n)) for n in DEFAULTS}


ICON = str(Path(__file__).resolve().parent.parent / "assets" / "icon.png")  # served by the app: no request leaves it


def page_setup(page_id: str) -> None:
    """Call first on every page: page config, settings, sidebar, URL mirror, header."""
    info = PAGE_BY_ID[page_id]
    st.set_page_config(page_title=f"{t(f'page.{page_id}.title')} · Attention Lab", page_icon=ICON,
                       layout="wide", initial_sidebar_state="expanded")
    refused = init_settings()
    from . import shared  # the scenario every page shares survives page switches

    shared.persist()
    inject_css()
    sidebar()
    for k, v in settings_query().items():
        if st.query_params.get(k) != v:
            st.query_params[k] = v
    if refused:
        st.warning(t("err.url_settings", names=", ".join(refused)))
    st.title(f"{info.icon} {t(f'page.{page_id}.title')}")
    st.caption(t("page.covers", ids=info.curriculum))
