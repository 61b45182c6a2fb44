"""Real browser: the vision transformer page on a real server."""

from __future__ import annotations

from playwright.sync_api import expect

from core.models import vit_trained
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z


def test_vit_click_a_patch_and_upload_a_bad_file(server_url, new_page, tmp_path):
    page = new_page(f"{server_url}/Vision_Transformer")
    if vit_trained.CHECKPOINT.is_file():  # the trained ViT is the default: switch to random weights
        expect(page.get_by_text("The trained ViT says:")).to_be_visible(timeout=60_000)
        page.get_by_text("random weights", exact=True).click()
        expect(page.get_by_text("seeded random (untrained) weights")).to_be_visible(timeout=60_000)
    wait_z(page, state.VISION_TRANSFORMER.grid, "z.length === 6")
    page.locator(css(state.VISION_TRANSFORMER.grid) + ' td[data-i="2"][data-j="3"]').click()
    expect(page.get_by_text("more attention from patch 15")).to_be_visible(timeout=30_000)
    bad = tmp_path / "fake.png"
    bad.write_bytes(b"this is not a png")
    page.locator(css(state.VISION_TRANSFORMER.upload) + " input[type=file]").set_input_files(str(bad))
    expect(page.get_by_text("not a readable PNG or JPEG")).to_be_visible(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "vision-transformer")
