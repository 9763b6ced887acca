"""The browser the page tests use can tell a drawn image from a broken one, and hears the console."""

import base64
def test_the_browser_sees_a_broken_image_and_a_drawn_one(browser, tmp_path):
    png = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a2e0b7fb0000000049454e44ae426082")).decode()
    (tmp_path / "p.html").write_text(f"<html><body><h1>hi</h1><img alt='x' src='data:image/png;base64,{png}'>"
                                     "<img alt='broken' src='nothere.png'></body></html>")
    view = browser.open(tmp_path / "p.html")
    view.screenshot(tmp_path / "p.png")
    assert view.broken_images() == ["broken"]
    assert any("nothere.png" in e for e in view.console_errors)
    assert (tmp_path / "p.png").stat().st_size > 1000
