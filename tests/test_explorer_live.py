"""The explorer page computes live in the reader's browser (``make book``
first): in headless Chromium, offline, the page's engine (onnxruntime-web
running the package's exported graphs, @huggingface/tokenizers reading the
models' tokenizer.json) gives the package's own numbers, and the page answers
every input with pictures or one line."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from live_fixture import B64, floats, live_page  # noqa: F401 (the shared fixture)

from mhacourse import bert, explorer, tasks, web_export
from mhacourse import tiny_model as tm
from site_browser import PAGE

# 22 sentences: the examples, one word, punctuation only, non-ASCII scripts,
# emoji, paragraphs, 100+ tokens, and more than the model's maximum.
SENTENCES = [
    *explorer.EXAMPLES,
    "cat",
    ".,;!?",
    "Naïve café, über-straße — déjà vu.",
    "日本語のテキストと English mixed",
    "Привет, мир: русский текст.",
    "مرحبا بالعالم",
    "emoji 😀 and 🐱 here",
    "First paragraph.\n\nSecond one, after a blank line.\n\tThird.",
    "  leading and trailing spaces  ",
    "it it it it it the the the cat cat",
    "İstanbul and ß and ﬁ ligature",
    "don't won't rock'n'roll o'clock",
    "In 2026, 3.14 × 10^5 = 314000 (about).",
    "x" * 120,
    " ".join(["the cat sat on the mat because it was soft"] * 12),  # 100+ tokens
    "word " * 600,                                                  # > 512 tokens
    "a b",
    "The teacher gave the students their homework, and then the students gave it back.",
]
TINY_MODELS = ["h4_dk16", "h1_dk64", "h16_dk4", "h8_dk32_init"]


@pytest.fixture(scope="module")
def page(live_page):  # noqa: F811 (the fixture imported above)
    """The explorer page (live_fixture.live_page) once its live engine has started."""
    p = live_page.page
    p.wait_for_function("window.mha?.explorer && window.mha?.explorer.engine !== 'loading'")
    assert p.evaluate("window.mha?.explorer.engine") == "ready", p.inner_text("#mha-status")
    return p, live_page.blocked, live_page.base




def run_tiny(p, name: str, text: str) -> dict:
    r = p.evaluate("""async ([n, t]) => { %s const r = await mha.engine.tiny(n, t);
        return {ids: r.ids, tokens: r.tokens, total: r.total, kept: r.kept,
                attn: r.attn.map(b64)}; }""" % B64, [name, text])
    r["attn"] = [floats(a) for a in r["attn"]]
    return r


def run_minilm(p, text: str, mask=None) -> dict:
    r = p.evaluate("""async ([t, m]) => { %s const r = await mha.engine.minilm(t,
            m ? Float32Array.from(m) : null);
        return {ids: r.ids, tokens: r.tokens, total: r.total, kept: r.kept,
                attn: r.attn.map(b64), embedding: b64(r.embedding)}; }""" % B64,
                   [text, mask])
    r["attn"] = [floats(a) for a in r["attn"]]
    r["embedding"] = floats(r["embedding"])
    return r


def settle(p, n_before: int) -> None:
    p.wait_for_function(f"mha.explorer.timings.length > {n_before}")


def n_timings(p) -> int:
    return p.evaluate("mha.explorer.timings.length")


def test_there_are_at_least_20_sentences():
    assert len(SENTENCES) >= 20


# ------------------------------------------------------------- parity: tiny

@pytest.mark.parametrize("name", TINY_MODELS)
def test_tiny_models_in_the_browser_equal_the_package(page, name):
    p, _, _ = page
    h, d_k = (int(x) for x in name.split("_init")[0][1:].split("_dk"))
    model = web_export.load_tiny(h, d_k, not name.endswith("_init"))
    tok = web_export.tiny_tokenizer()
    worst = 0.0
    for text in SENTENCES:
        got = run_tiny(p, name, text)
        ids = tok.encode(text, add_special_tokens=False).ids
        assert got["total"] == len(ids), text
        assert got["ids"] == ids[:16], f"token ids differ for {text!r}"
        assert got["ids"] == tasks.word_ids(text)[:16]
        with torch.no_grad():  # the package's checked forward pass
            _, attention = model(torch.tensor([got["ids"]]), return_attention=True)
        L = len(got["ids"])
        for A_web, A in zip(got["attn"], attention, strict=True):
            A_web = np.array(A_web).reshape(1, h, L, L)
            worst = max(worst, float(np.abs(A_web - A.numpy()).max()))
    assert worst <= 1e-5, f"{name}: largest difference {worst:.2e}"


def test_every_tiny_model_runs_in_the_browser(page):
    p, _, _ = page
    text = explorer.EXAMPLES[2]
    ids = tasks.word_ids(text)
    for entry in web_export.tiny_cells():
        for trained in (True, False):
            name = tm.model_name(*entry, trained)
            model = web_export.load_tiny(*entry, trained)
            got = run_tiny(p, name, text)
            with torch.no_grad():
                _, attention = model(torch.tensor([ids]), return_attention=True)
            for A_web, A in zip(got["attn"], attention, strict=True):
                diff = np.abs(np.array(A_web).reshape(A.shape) - A.numpy()).max()
                assert diff <= 1e-5, f"{name}: {diff:.2e}"


# ------------------------------------------------------------ parity: MiniLM

@pytest.fixture(scope="module")
def minilm(page):
    p, _, _ = page
    p.evaluate("mha.engine.loadMiniLM()")
    p.wait_for_function("mha.engine.minilmLoaded()")
    return p


def assert_same_as_package(got: dict, enc) -> None:
    """The page's MiniLM run equals ``bert.encode``'s: every layer's weights
    to 1e-4, the sentence embedding to 1e-5."""
    n = len(got["ids"])
    for l, A in enumerate(enc.attentions):
        diff = np.abs(np.array(got["attn"][l]).reshape(1, 12, n, n) - A.numpy()).max()
        assert diff <= 1e-4, f"layer {l + 1}: {diff:.2e}"
    e = bert.mean_pool(enc.hidden_states[-1], enc.attention_mask)[0].numpy()
    assert np.abs(np.array(got["embedding"]) - e).max() <= 1e-5


@pytest.mark.parametrize("text", SENTENCES, ids=range(len(SENTENCES)))
def test_minilm_in_the_browser_equals_the_package(minilm, text):
    got = run_minilm(minilm, text)
    enc = bert.encode(text) if len(text.split()) < 500 else None
    if enc is None:
        with pytest.warns(UserWarning, match="kept the first 511"):
            enc = bert.encode(text)
    assert got["ids"] == enc.input_ids[0].tolist(), "token ids differ from Python tokenizers'"
    assert got["kept"] == enc.lengths[0] <= 512
    assert_same_as_package(got, enc)


def test_minilm_head_removal_in_the_browser_equals_the_package(minilm):
    mask = torch.ones(6, 12)
    mask[1, 4] = 0
    mask[3, 0] = 0
    text = explorer.EXAMPLES[1]
    got = run_minilm(minilm, text, mask.flatten().tolist())
    enc = bert.encode(text, head_mask=mask)
    assert_same_as_package(got, enc)


# ----------------------------------------------- precomputed views agree

def test_precomputed_views_agree_with_the_live_engine(minilm):
    """The first paint (computed by the package at build time, stored as
    16-bit fractions: error <= 7.6e-6) and the live engine agree to 2e-5."""
    p = minilm
    for i, text in enumerate(explorer.EXAMPLES):
        for h, d_k in web_export.tiny_cells():
            for trained in (True, False):
                name = tm.model_name(h, d_k, trained)
                pre = p.evaluate("([n, i]) => mha.explorer.precomputed(n, i)", [name, i])
                live = run_tiny(p, name, text)
                assert pre["tokens"] == live["tokens"]
                for a, b in zip(pre["attn"], live["attn"], strict=True):
                    assert np.abs(np.array(a) - np.array(b)).max() <= 2e-5, name
        pre = p.evaluate("([i]) => mha.explorer.precomputed('minilm', i)", [i])
        live = run_minilm(p, text)
        assert pre["tokens"] == live["tokens"]
        for a, b in zip(pre["attn"], live["attn"], strict=True):
            assert np.abs(np.array(a) - np.array(b)).max() <= 2e-5


# ------------------------------------------------------------ the page

def thumbs(p) -> int:
    return p.locator("#mha-explorer .mha-thumb").count()


def click(p, label_for: str) -> None:
    """Pick a radio option (or tick a box) and wait for the redraw."""
    box = p.locator(f"#{label_for}")
    if box.is_checked() and box.get_attribute("type") == "radio":
        return  # already picked: no change, no redraw
    n = n_timings(p)
    p.click(f"label[for={label_for}]")
    settle(p, n)


def type_text(p, text: str) -> None:
    n = n_timings(p)
    p.fill("#mha-text", text)
    settle(p, n)


def test_controls_change_h_dk_and_layer(page):
    p, _, _ = page
    click(p, "mha-source-trained")
    click(p, "mha-mode-budget")
    for h in (1, 2, 4, 8, 16):
        click(p, f"mha-h-{h}")
        assert thumbs(p) == h
        header = p.inner_text(".mha-header")
        assert f"h = {h} heads × d_k = {64 // h} = d_model 64" in header
        assert "held-out accuracy" in header
        assert p.locator(".mha-strip .mha-block").count() == h
    assert not p.locator("#mha-dk").is_visible(), "d_k is set by h in the same-budget mode"
    click(p, "mha-mode-wide")
    click(p, "mha-h-4")
    widths = []
    for d_k in (8, 16, 32):
        click(p, f"mha-dk-{d_k}")
        assert f"d_model {4 * d_k};" in p.inner_text(".mha-header")
        widths.append(p.locator(".mha-strip-bar").bounding_box()["width"])
    assert widths[0] < widths[1] < widths[2], "the strip does not grow with d_k"
    before = p.locator(".mha-thumb").first.screenshot()
    click(p, "mha-layer-1")
    assert p.locator(".mha-thumb").first.screenshot() != before
    assert p.locator("#mha-layer input[type=radio]").count() == 2


def test_bad_input_gets_one_line_and_the_page_recovers(page):
    p, _, _ = page
    click(p, "mha-source-trained")
    cases = {
        "": "Type a sentence",
        "    \n  ": "Type a sentence",
        "😀 🐱 日本": "None of these words",
    }
    for text, expected in cases.items():
        type_text(p, text)
        assert expected in p.inner_text("#mha-message"), text
        assert not p.locator(".mha-pictures").is_visible(), "stale pictures left on screen"
        type_text(p, explorer.EXAMPLES[3])
        assert p.inner_text("#mha-message") == ""
        assert p.locator(".mha-pictures").is_visible()
    type_text(p, " ".join(["the cat sat on the mat"] * 5))
    assert "kept the first 16 of 30" in p.inner_text(".mha-notes")
    type_text(p, "the cat 😀 sat\n\non the mat")
    assert "shown as [UNK]" in p.inner_text(".mha-notes")
    assert p.locator(".mha-pictures").is_visible()


def test_heatmaps_work_from_the_keyboard(page):
    p, _, _ = page
    type_text(p, explorer.EXAMPLES[0])
    p.focus("#mha-explorer .mha-thumb >> nth=1")
    first = p.inner_text(".mha-readout")
    assert "Head 2: query" in first and "→ key" in first
    p.keyboard.press("ArrowDown")
    p.keyboard.press("ArrowDown")
    assert p.inner_text(".mha-readout") != first
    p.keyboard.press("Enter")
    assert p.evaluate("document.activeElement.classList.contains('mha-detail')")
    assert "Head 2, larger" in p.inner_text(".mha-detail-title")
    # toggles are native radio buttons in fieldsets with legends
    assert p.locator("#mha-h legend").inner_text() == "Heads h"
    assert p.locator("#mha-h input[type=radio]:checked").count() == 1


def test_minilm_head_switch_changes_later_layers_and_reports_the_cosine(page, minilm):
    p = minilm
    click(p, "mha-source-minilm")
    p.wait_for_function("window.mha?.explorer.minilm === 'ready' || mha.engine.minilmLoaded()")
    if p.locator("button.mha-load").is_visible():
        n = n_timings(p)
        p.click("button.mha-load")
        p.wait_for_function("window.mha?.explorer.minilm === 'ready'")
        settle(p, n)
    type_text(p, "The robot picked up the ball because it was light.")
    click(p, "mha-layer-3")
    assert thumbs(p) == 12
    before = p.locator(".mha-thumb").first.screenshot()
    click(p, "mha-layer-1")
    n = n_timings(p)
    p.click("label[for=mha-use-2]")  # switch off layer 1, head 3
    settle(p, n)
    assert "Switched off: L1H3" in p.inner_text(".mha-notes")
    assert "Cosine" in p.inner_text(".mha-notes")
    click(p, "mha-layer-3")
    assert p.locator(".mha-thumb").first.screenshot() != before, "layer 3 did not change"
    n = n_timings(p)
    p.click("button.mha-reset")
    settle(p, n)
    assert "Switched off" not in p.inner_text(".mha-notes")


def test_without_webassembly_one_line_says_so_and_the_examples_still_work(page):
    first, blocked, base = page
    p = first.context.new_page()  # same offline context, a browser without wasm
    try:
        p.add_init_script("delete window.WebAssembly;")
        p.goto(f"{base}/{PAGE}")
        p.wait_for_function("window.mha?.explorer && window.mha?.explorer.engine === 'failed'")
        assert "Live engine unavailable" in p.inner_text("#mha-status")
        assert thumbs(p) == 4
        assert "(precomputed at build time)" in p.inner_text(".mha-header")
        click(p, "mha-h-8")
        assert thumbs(p) == 8
        type_text(p, "my own sentence")
        assert "only the example sentences" in p.inner_text("#mha-message")
        n = n_timings(p)
        p.click("button.mha-example >> nth=2")
        settle(p, n)
        assert thumbs(p) == 8 and p.inner_text("#mha-message") == ""
        assert blocked == []
    finally:
        p.close()
