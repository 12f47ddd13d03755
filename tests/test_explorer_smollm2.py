"""The explorer's SmolLM2 view (``make book`` first): in headless Chromium,
offline, nothing is downloaded until the reader asks; then the page runs
the package's exported SmolLM2 (``mhacourse.real_lm.web``: 4-bit blocks,
onnxruntime's ``MatMulNBits``) and gives the package's own attention weights
and next-token losses, with and without heads; each bad input gets one line;
and a page opened from disk shows the precomputed examples with the reason.

Tolerances. The graph multiplies the GGUF file's own blocks, the numbers
``load_smollm2()`` dequantizes: ``d * (q - zp)`` with ``zp = -m / d`` against
``d * q + m``, a difference of a few float32 roundings (about 1e-7 of a
weight). What is left is float32 summation in another order through 30
blocks (onnxruntime's kernels against PyTorch's): seen about 3e-6 on the
weights and 2e-5 nats on the losses (onnxruntime in Python, the same
graph). The bounds, 1e-4 for weights and 2e-3 nats for losses, leave room
for WebAssembly's kernels and are far below what a wrong head, position or
block would give (weights move by 1e-2 and more, losses by 1e-1)."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from live_fixture import B64, floats

from mhacourse import real_lm
from mhacourse.real_lm import induction
from site_browser import DRIVE, PAGE, SITE, WAIT_MS, offline_page, serve

SMOL = SITE / "_static" / "explorer-data" / "smollm2"
ATTN_TOL, LOSS_TOL = 1e-4, 2e-3
SENTENCES = [
    "The cat sat on the mat because it was soft.",
    "In 2026, 3.14 × 10^5 = 314000 (about).",
    "Naïve café, déjà vu — 日本語 and emoji 😀.",
    "it it it the the the",
]


@pytest.fixture(scope="module")
def lm():
    return real_lm.load_smollm2()


@pytest.fixture(scope="module")
def page():
    """The explorer page, with every request it makes recorded."""
    if not (SMOL / "precomputed.js").exists():
        pytest.fail("the site is not built with SmolLM2: run `make book` first")
    with serve() as base, offline_page(base) as (p, blocked):
        errors, requests = [], []
        p.on("pageerror", lambda e: errors.append(str(e)))
        p.on("request", lambda r: requests.append(r.url))
        p.goto(f"{base}/{PAGE}")
        p.wait_for_function("window.mha && window.mha.smollm2 && mha.smollm2.view")
        yield p, requests, errors
        assert [e for e in errors if "THEBE_JS_URL" not in e] == [], errors
        assert blocked == [], f"the page tried to reach {blocked}"


def run(p, ids, mask=None) -> dict:
    r = p.evaluate("""async ([ids, m]) => { %s
        const r = await mha.smol.run(ids, m ? Float32Array.from(m) : null);
        return {loss: b64(r.loss), attn: r.attn.map(b64)}; }""" % B64, [ids, mask])
    return {"loss": floats(r["loss"]), "attn": [floats(a) for a in r["attn"]]}


def settle(p, before: int) -> str:
    """Wait for the view's next update; return its message line."""
    p.wait_for_function(f"mha.smollm2.timings.length + mha.smollm2.lines.length > {before}")
    return p.inner_text("#mha-smollm2 .mha-smol-message")


def count(p) -> int:
    return p.evaluate("mha.smollm2.timings.length + mha.smollm2.lines.length")


def show(p, text: str, repeat: bool = False, off: str = "") -> str:
    """Set the sentence, "Repeat it" and the heads off, as one change (one
    input event: no other control's change event races it); the message."""
    before = count(p)
    p.evaluate("""([t, r, o]) => {
        document.getElementById('mha-smol-off').value = o;
        document.getElementById('mha-smol-repeat').checked = r;
        const box = document.getElementById('mha-smol-text');
        box.value = t; box.dispatchEvent(new Event('input')); }""", [text, repeat, off])
    return settle(p, before)


def test_nothing_is_downloaded_before_the_reader_asks_and_the_size_is_stated(page):
    p, requests, _ = page
    assert not [u for u in requests if "smollm2.onnx" in u or "smollm2/tokenizer" in u]
    mb = sum((SMOL / f).stat().st_size for f in ("smollm2.onnx", "smollm2.onnx.data")) / 1e6
    assert f"({mb:.1f} MB download" in p.inner_text("#mha-smollm2 .mha-smol-load")
    assert p.evaluate("mha.smollm2.view.live") is False  # the precomputed example
    assert p.locator("#mha-smollm2 .mha-smol-grid canvas").count() == 9


def test_the_page_gives_the_packages_weights_and_losses(page, lm):
    p, requests, _ = page
    p.click("#mha-smollm2 .mha-smol-load")
    p.wait_for_function("mha.smollm2.state !== 'precomputed'", timeout=300_000)
    assert p.evaluate("mha.smollm2.state") == "ready", p.inner_text("#mha-smollm2 .mha-smol-status")
    assert sum(u.endswith("/smollm2.onnx") for u in requests) == 1  # the graph, once
    assert sum(u.endswith("/smollm2.onnx.data") for u in requests) == 1  # its weights, once
    worst_a = worst_l = 0.0
    for text in SENTENCES:
        ids = p.evaluate("async (t) => (await mha.smol.tokenize(t)).ids", text)
        assert ids == lm.encode(text)[0].tolist(), f"token ids differ for {text!r}"
        for x in (ids, ids + ids):  # as typed, and repeated
            got = run(p, x)
            t = torch.tensor([x])
            _, attention = lm.forward(t)
            loss = induction.token_losses(lm, t)[0].numpy()
            L = len(x)
            worst_l = max(worst_l, float(np.abs(got["loss"] - loss).max()))
            for A_web, A in zip(got["attn"], attention, strict=True):
                worst_a = max(worst_a, float(np.abs(A_web.reshape(9, L, L) - A[0].numpy()).max()))
    print(f"SmolLM2 in the page against the package: attention {worst_a:.1e}, loss {worst_l:.1e}")
    assert worst_a <= ATTN_TOL and worst_l <= LOSS_TOL, (worst_a, worst_l)


def test_switching_heads_off_changes_the_loss_as_in_the_package(page, lm):
    p, _, _ = page
    heads = p.evaluate("mha.smol.manifest.induction_heads")
    ids = lm.encode(SENTENCES[0])[0].tolist() * 2
    mask = torch.ones(30, 9)
    for h in heads:
        layer, head = (int(x) for x in h.split("."))
        mask[layer - 1, head - 1] = 0
    t = torch.tensor([ids])
    want = (induction.token_losses(lm, t, mask) - induction.token_losses(lm, t))[0].numpy()
    got = run(p, ids, mask.flatten().tolist())["loss"] - run(p, ids)["loss"]
    assert np.abs(got - want).max() <= 2 * LOSS_TOL, np.abs(got - want).max()
    half = len(ids) // 2
    assert want[half + 1:].mean() > 0.2  # the copying goes: the second copy's loss rises
    # through the controls: the button, the line and the chart follow
    assert show(p, SENTENCES[0], repeat=True) == ""
    before = count(p)
    p.click("#mha-smollm2 button:has-text('strongest induction heads')")
    assert settle(p, before) == ""
    line = p.inner_text("#mha-smollm2 .mha-smol-readout")
    assert "second copy" in line and "every head on" in line and heads[0] in line, line
    # every head at once: the strip's squares are the layers' own patterns,
    # the heads off crossed out; a click on a column shows that layer large
    strip = p.locator("#mha-smollm2 canvas.mha-smol-all")
    box = strip.bounding_box()
    assert box["width"] >= 30 * 8 and abs(box["width"] / box["height"] - 30 / 9) < 0.05, box
    assert "Crossed out" in strip.get_attribute("aria-label")
    before = count(p)
    strip.click(position={"x": box["width"] * 4.5 / 30, "y": box["height"] / 2})
    settle(p, before)
    assert p.input_value("#mha-smol-layer") == "5"
    assert "layer 5 of 30" in p.inner_text("#mha-smollm2 .mha-smol-header >> nth=1")


@pytest.mark.parametrize("label, text, repeat, off, expect", [
    ("empty", "   ", False, "", "the text is empty"),
    ("too long", "word " * 70, False, "", "at most 64"),
    ("too long repeated", "the cat sat on the mat " * 6, True, "", "do not repeat it"),
    ("head out of range", "The cat sat.", False, "31.2", "There is no head \"31.2\""),
    ("head zero", "The cat sat.", False, "4.0", "There is no head \"4.0\""),
    ("not a head", "The cat sat.", False, "4.10", "There is no head \"4.10\""),
])
def test_bad_input_gets_one_line_and_no_stale_pictures(page, label, text, repeat, off, expect):
    p, _, _ = page
    assert p.evaluate("mha.smollm2.state") == "ready"
    line = show(p, text, repeat, off)
    assert expect in line and "\n" not in line.strip(), (label, line)
    assert p.locator("#mha-smollm2 .mha-smol-pictures").is_hidden()
    assert p.evaluate("mha.smollm2.view") is None
    # the next good sentence brings the pictures back
    assert show(p, "The dog ran home.") == ""
    assert p.locator("#mha-smollm2 .mha-smol-pictures").is_visible()


def other_page(page, base: str, reached: list[str]):
    """A second page of the module's browser, in a context of its own that
    reaches ``base`` (and file: URLs) only."""
    context = page.context.browser.new_context(viewport={"width": 1280, "height": 900}, **DRIVE)
    context.set_default_timeout(WAIT_MS)
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith((base, "file:"))
                  else (reached.append(r.request.url), r.abort()))
    return context, context.new_page()


def test_too_little_memory_gets_one_line_and_the_examples(page):
    p0, _, _ = page
    base = p0.url.split("/chapters/")[0]
    blocked: list[str] = []
    context, p = other_page(p0, base, blocked)
    try:
        p.add_init_script("Object.defineProperty(navigator, 'deviceMemory', {get: () => 0.5})")
        p.goto(f"{base}/{PAGE}")
        p.wait_for_function("window.mha && mha.smollm2 && mha.smollm2.view")
        status = p.inner_text("#mha-smollm2 .mha-smol-status")
        assert status.startswith("Live SmolLM2 is off: this device reports 0.5 GB"), status
        assert p.locator("#mha-smollm2 .mha-smol-load").is_hidden()
        assert p.locator("#mha-smollm2 .mha-smol-grid canvas").count() == 9
        assert blocked == []
    finally:
        context.close()


def test_a_page_opened_from_disk_shows_the_examples_and_says_why(page):
    reached: list[str] = []
    context, p = other_page(page[0], "file:", reached)
    try:
        p.goto((SITE / PAGE).as_uri())
        p.wait_for_selector("#mha-smollm2.mha-smol-fallback canvas")
        status = p.inner_text("#mha-smollm2 .mha-smol-status")
        assert "Live SmolLM2 off" in status and "file://" in status, status
        assert p.locator("#mha-smollm2 canvas").count() == 9
        p.select_option("#mha-smol-fallback-view", "1")
        assert "SmolLM2-135M, layer" in p.inner_text("#mha-smollm2 .mha-smol-header")
        assert reached == []
    finally:
        context.close()
