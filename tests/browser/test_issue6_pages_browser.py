"""The seq2seq, Transformer-block and ViT pages in a real browser, with screenshots."""

from __future__ import annotations

from playwright.sync_api import expect

from .test_playground_browser import shot, wait_z


def test_seq2seq_training_in_the_browser(server_url, new_page):
    page = new_page(f"{server_url}/Seq2seq")
    page.locator(".st-key-s2-task").get_by_text("copy").click()
    page.get_by_role("button", name="Train the model").click()
    expect(page.get_by_text("Trained:")).to_be_visible(timeout=120_000)
    W = wait_z(page, "s2-map", "z.length >= 2", timeout=60_000)
    assert abs(W.sum(axis=1) - 1).max() < 0.03  # each output step's weights over the input sum to 1 (2 decimals shown)
    shot(page, "seq2seq")


def test_transformer_block_page(server_url, new_page):
    page = new_page(f"{server_url}/Transformer_block")
    wait_z(page, "tb-post-y", "z.length === 4 && z[0].length === 8")
    wait_z(page, "tb-pre-y", "z.length === 4 && z[0].length === 8")
    expect(page.get_by_text("Residual shapes (C31)")).to_be_visible()
    shot(page, "transformer-block")


def test_vit_click_a_patch_and_upload_a_bad_file(server_url, new_page, tmp_path):
    page = new_page(f"{server_url}/Vision_Transformer")
    wait_z(page, "vt-grid", "z.length === 6")
    page.locator('.st-key-vt-grid td[data-i="2"][data-j="3"]').click()
    expect(page.get_by_text("more attention from patch 15")).to_be_visible(timeout=30_000)
    bad = tmp_path / "fake.png"
    bad.write_bytes(b"this is not a png")
    page.locator(".st-key-vt-upload input[type=file]").set_input_files(str(bad))
    expect(page.get_by_text("not a readable PNG or JPEG")).to_be_visible(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    shot(page, "vision-transformer")
