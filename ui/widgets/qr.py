"""A QR code of a link, drawn on the server (no request leaves it) for phones in the classroom,
shown in its column with a full-screen view (assets/components/qr.js)."""

from __future__ import annotations

import base64
import functools
import io

import qrcode
import streamlit as st
from qrcode.image.pil import PilImage

from .. import view
from ..i18n import t
from ..link import PUBLIC_URL_ENV
from .assets import ASSETS, DOM_LIB

MAX_LINK = 2900  # a version-40 QR code (low error correction) holds about 2,950 bytes
_QR_COMPONENT = st.components.v2.component(
    "attention_lab_qr", js=DOM_LIB + (ASSETS / "qr.js").read_text(encoding="utf-8"),
    css=(ASSETS / "qr.css").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=32)  # ≤ 32 codes of ≤ ~20 KB: a long lesson link's code takes ~120 ms to draw
def qr_png(link: str) -> bytes | None:
    """PNG bytes of the link's QR code, or None when the link is too long for one code (the last 32 kept)."""
    data = link.encode("utf-8")
    if len(data) > MAX_LINK:
        return None
    qr = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_L, box_size=6, border=3)
    qr.add_data(data)
    qr.make(fit=True)
    buf = io.BytesIO()
    qr.make_image(image_factory=PilImage).save(buf, format="PNG")
    return buf.getvalue()


def show_qr(png: bytes, link: str, *, key: str, caption: str, full: str, close: str) -> None:
    """The code (as wide as its column allows, at most 220 px), its caption and a full-screen
    button (labels ``full`` / ``close``, in the current language)."""
    _QR_COMPONENT(data={"png": base64.b64encode(png).decode("ascii"), "link": link, "caption": caption,
                        "full": full, "close": close}, key=key)


def qr_with_host(link: str, *, key: str, host_key: str, caption: str | None = None) -> None:
    """A class link's QR code in its column (full screen on a click), a note when the link points at this
    machine only, and the host students use (the text box ``host_key``, checked). ``caption``: under the code
    (the Share tab's words for its focused link by default)."""
    png = qr_png(link)
    if png is None:
        st.caption(t("share.qr.too_long"))
    else:
        show_qr(png, link, key=key, caption=caption or t("share.qr"), full=t("class.qr.full"), close=t("class.qr.close"))
    if view.is_local(link):
        st.warning(t("class.qr.localhost"))
    st.text_input(t("class.host"), key=host_key, max_chars=260, placeholder="192.168.0.12:8501",
                  help=t("class.host.help", env=PUBLIC_URL_ENV))
    typed = st.session_state.get(host_key) or ""
    if typed.strip() and view.with_host("http://x/", typed) is None:
        st.error(t("class.host.bad"))
