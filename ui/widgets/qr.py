"""A QR code of a link, drawn on the server (no request leaves it) for phones in the classroom."""

from __future__ import annotations

import io

import qrcode
from qrcode.image.pil import PilImage

MAX_LINK = 2900  # a version-40 QR code (low error correction) holds about 2,950 bytes


def qr_png(link: str) -> bytes | None:
    """PNG bytes of the link's QR code, or None when the link is too long for one code."""
    data = link.encode("utf-8")
    if len(data) > MAX_LINK:
        return None
    qr = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_L, box_size=6, border=3)
    qr.add_data(data)
    qr.make(fit=True)
    buf = io.BytesIO()
    qr.make_image(image_factory=PilImage).save(buf, format="PNG")
    return buf.getvalue()
