"""Attention Lab — the frame around every page. Run: ``streamlit run app.py``

Page config, the translated navigation (``st.navigation``), the sidebar settings, the page
header and the error boundary: once, here.
Each page is one file in ``app_pages/`` (see ``ui/nav.py``)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui import compute, live, nav, page, presenter, settings, state, uploads
from ui.i18n import t, this_run
from ui.widgets import a11y
from ui.widgets.guard import connection_guard, forget_button, memory
from ui.widgets.layout import CSS

ICON = str(Path(__file__).resolve().parent / "assets" / "icon.png")  # served by the app: no request leaves it


def _pages() -> dict[str, st.Page]:
    """One st.Page per entry of ui.nav.PAGES, titled in the current language; the URL paths are
    those shared links already use."""
    # no icon on st.Page: the browser would fetch a page's material icon from Google as its
    # favicon; the app's own icon (set_page_config) is served locally (an offline classroom)
    return {p.name: st.Page(p.file, title=t(f"page.{p.name}.title"), default=p.name == "home",
                            **({"url_path": p.url} if p.url else {})) for p in nav.PAGES}


def _sections(pages: dict[str, st.Page]) -> dict[str, list[st.Page]]:
    """The navigation in translated sections (start, tutorial, explore, trained models)."""
    return {t(f"nav.section.{s}"): [pages[p.name] for p in nav.PAGES if p.section == s] for s in nav.SECTIONS}


def main() -> None:
    refused = settings.init()
    with this_run():  # the language, read once for the run
        frame(refused)
    compute.settled()  # once per server: what the first run made alive stays out of the collector's walks


def frame(refused: list[str]) -> None:
    connection_guard()  # first: before anything can write the URL of a new session
    uploads.install()  # the upload caps (once per server), and the files of ended sessions freed
    uploads.sweep_when_due()
    pages = _pages()
    current = st.navigation(_sections(pages), position="sidebar", expanded=True)
    st.set_page_config(page_title=f"{current.title} · Attention Lab", page_icon=ICON, layout="wide",
                       initial_sidebar_state="auto")  # folded on a phone
    # the app's CSS, <html lang>, contrast and focus
    a11y.frame(settings.get("lang"), bool(settings.get("contrast")), key=state.FRAME.a11y, css=CSS)
    settings.sidebar()
    with st.sidebar:
        forget_button()
    if refused:
        st.warning(t("err.url_settings", names=", ".join(refused)))
    presenter.frame(current.url_path)  # ?present=1: no sidebar, larger type, maps to the screen (every page and lesson)
    st.title(current.title)  # (a material icon in a heading is fetched from Google: none here)
    remember(current)
    page.boundary(lambda: live.frame(current.url_path) or current.run())  # a seated student follows the class; paused: no page


def remember(current: st.Page) -> None:
    """Where the learner stopped, kept in this browser, and the offer to go back on a bare visit."""
    name = next((p.name for p in nav.PAGES if p.url and p.url == current.url_path), "home")
    pages, lessons = nav.offer_words(settings.get("lang"))
    memory(home=name == "home", tutorial=name == "tutorial", pages=pages, lessons=lessons)


main()
