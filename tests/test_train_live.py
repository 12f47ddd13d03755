"""Training in the reader's browser ("Train it yourself", ``make book``
first): in headless Chromium, offline, the explorer page trains the course's
tiny model with the package's exported training step, and the numbers agree
with onnxruntime and with the package in Python. Every bad input gets one
line, and the page recovers from it."""
from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch

from mhacourse import tasks, web_train
from mhacourse import tiny_model as tm
from mhacourse.tiny_model import step as st
from site_browser import ROOT, SITE, offline_page, serve

PAGE = "chapters/explorer.html"
TRAIN = ROOT / "_generated" / "explorer-data" / "train"


@pytest.fixture(scope="module")
def page():
    if not (SITE / PAGE).exists():
        pytest.fail("the site is not built: run `make book` first")
    with serve() as base, offline_page(base) as (p, blocked):
        errors: list[str] = []
        p.on("pageerror", lambda e: errors.append(str(e)))
        p.goto(f"{base}/{PAGE}")
        p.wait_for_function("window.mhaTrainer && mhaTrainer.panels.length === 2")
        # the workers start only when the trainer comes near the screen
        p.wait_for_timeout(1500)
        assert p.evaluate("mhaTrainer.panels.map(q => q.state)") == ["idle", "idle"], \
            "the trainer started its workers before the reader scrolled to it"
        p.locator(".mha-trainer").scroll_into_view_if_needed()
        p.wait_for_function("mhaTrainer.panels.every(q => q.state === 'ready')", timeout=60_000)
        yield p, blocked
        ours = [e for e in errors if "THEBE_JS_URL" not in e]
        assert ours == [], f"JavaScript errors: {ours}"
        assert blocked == [], f"the page tried to reach {blocked}"


def panel(p, i: int):
    return p.locator(".mha-train-panel").nth(i)


def set_size(p, i: int, h, d_k, budget: bool = False) -> None:
    box = panel(p, i)
    box.locator("input[type=checkbox]").set_checked(budget)
    box.locator("input[id$='-h']").fill(str(h))
    if not budget:
        box.locator("input[id$='-dk']").fill(str(d_k))


def state(p, i: int) -> str:
    return p.evaluate("i => mhaTrainer.panels[i].state", i)


def wait_state(p, i: int, states, timeout=60_000) -> None:
    p.wait_for_function("([i, s]) => s.includes(mhaTrainer.panels[i].state)",
                        arg=[i, list(states)], timeout=timeout)


def message(p, i: int) -> str:
    return panel(p, i).locator(".mha-train-message").inner_text()


def reset(p, i: int) -> None:
    if panel(p, i).locator(".mha-train-reset").is_enabled():
        panel(p, i).locator(".mha-train-reset").click()


def ready(p, i: int, h, d_k, budget=False) -> None:
    reset(p, i)
    set_size(p, i, h, d_k, budget)
    wait_state(p, i, ["ready"])
    assert message(p, i) == ""
    # the count the page shows before the model is built (from the shapes in
    # the manifest) is the package's, and the built model's
    d_k = web_train.BUDGET_D_MODEL // h if budget else d_k
    n = tm.n_params(tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k)))
    assert p.evaluate("i => mhaTrainer.panels[i].params", i) == n
    assert f"{n:,} parameters" in panel(p, i).locator(".mha-train-summary").inner_text()


def page_weights(p, i: int) -> dict:
    r = p.evaluate("i => mhaTrainer.panels[i].weights()", i)
    return {"step": r["step"], "arrays": r["arrays"], "names": r["names"]}


def test_trains_h4_dk16_to_ninety_percent(page):
    """The page trains h = 4, d_k = 16 from scratch to >= 90 % held-out
    accuracy, and names the heads it formed."""
    p, _ = page
    ready(p, 0, 4, 16)
    panel(p, 0).locator(".mha-train-go").click()
    wait_state(p, 0, ["done"], timeout=300_000)
    evals = p.evaluate("mhaTrainer.panels[0].evals.map(e => e.accuracy)")
    assert evals[-1][0] >= 0.9, evals
    roles = p.evaluate("mhaTrainer.panels[0].roleNames")
    assert any(r != "mixed" for layer in roles for r in layer), roles
    text = panel(p, 0).locator(".mha-train-accuracy").inner_text()
    assert f"{100 * evals[-1][0]:.1f}%" in text


def test_page_weights_equal_onnxruntime_in_python(page):
    """20 steps in the page against the same graphs in Python's onnxruntime,
    from the same initial weights: every step's loss within 1e-5, and the
    weights after 20 steps within 1e-5 of the largest, except where AdamW
    magnifies float32 rounding.

    WebAssembly's kernels round differently from the native ones, and AdamW
    divides each gradient by the root of its running square: where a
    gradient is nearly 0 that ratio turns rounding into a visible step. Most
    of all for b_K, whose gradient is exactly 0 in exact arithmetic (adding
    the same q . b_K to every score of a query leaves its softmax unchanged),
    so both runs move it by pure rounding noise of up to lr per step, as
    torch.optim.AdamW does in tm.train. Measured: 35 of 38 tensors within
    1e-5, W_O and W_Q of layer 1 within 2e-5, b_K within 1e-3.
    """
    p, _ = page
    h, d_k, n = 3, 20, 20
    ready(p, 1, h, d_k)
    p.evaluate("n => mhaTrainer.panels[1].worker.postMessage({type: 'steps', steps: n})", n)
    panel(p, 1).locator(".mha-train-go").click()
    wait_state(p, 1, ["done"], timeout=120_000)
    got = page_weights(p, 1)
    page_losses = p.evaluate("mhaTrainer.panels[1].losses")
    assert got["step"] == n and len(page_losses) == n
    ort.set_default_logger_severity(3)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    init = ort.InferenceSession(str(TRAIN / "init.onnx"), so)
    step = ort.InferenceSession(str(TRAIN / "step.onnx"), so)
    P = init.run(None, {"noise": st.noise_pool().half().numpy(),
                        "width": np.zeros(h * d_k, np.float32), "seed": np.array(0)})
    M = [np.zeros_like(a) for a in P]
    V = [np.zeros_like(a) for a in P]
    names = [i.name for i in step.get_inputs()]
    xs = web_train.batches(n)
    N = len(P)
    losses = []
    for s in range(n):
        feed = [*P, *M, *V, np.array(s, np.float32), np.array(n, np.float32),
                xs[s].numpy(), np.zeros(h, np.float32)]
        r = step.run(None, dict(zip(names, feed)))
        losses.append(float(r[0]))
        P, M, V = r[2:2 + N], r[2 + N:2 + 2 * N], r[2 + 2 * N:2 + 3 * N]
    np.testing.assert_allclose(page_losses, losses, atol=1e-5, rtol=0)
    assert got["names"] == st.param_names()
    errors = {name: float(np.abs(np.asarray(a, np.float32) - b.ravel()).max())
              for name, a, b in zip(got["names"], got["arrays"], P)}
    within = [k for k, e in errors.items() if e <= 1e-5]
    assert len(within) >= 34, errors
    for name, err in errors.items():
        bound = 1e-3 if name.endswith("b_K") else 5e-5
        assert err <= bound, f"{name}: page and onnxruntime differ by {err:.2e}"


def test_trained_model_attention_equals_the_package(page):
    """The page's heatmaps for a model it trained are the package's
    attention for the same weights (TinyTransformer, checked forward)."""
    p, _ = page
    got = page_weights(p, 1)  # the model of the test above (or later steps)
    h, d_k = 3, 20
    model = tm.TinyTransformer(tm.TinyConfig(h=h, d_k=d_k))
    shapes = {k: v.shape for k, v in model.state_dict().items()}
    model.load_state_dict({k: torch.tensor(a, dtype=torch.float32).reshape(shapes[k])
                           for k, a in zip(got["names"], got["arrays"])})
    sentence = "the cat sat on the mat because the cat was tired"
    box = panel(p, 1).locator(".mha-train-sentence")
    box.fill(sentence)
    L = len(tasks.split_words(sentence))
    p.wait_for_function("mhaTrainer.panels[1].lastAttention && "
                        "mhaTrainer.panels[1].lastAttention.L === %d" % L)
    assert p.evaluate("mhaTrainer.panels[1].lastAttention.step") == got["step"], \
        "the heatmaps are of the model whose weights the test read"
    page_attn = p.evaluate("mhaTrainer.panels[1].lastAttention.attn.map(a => Array.from(a))")
    _, attention = tm.attention_on(model, sentence)
    for a, b in zip(page_attn, attention):
        np.testing.assert_allclose(np.asarray(a, np.float32), b.numpy().ravel(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("h,d_k,budget,words", [
    (3, 8, True, "does not divide d_model = 64"),
    (17, 4, False, "h must be a whole number from 1 to 16"),
    (0, 8, False, "h must be a whole number from 1 to 16"),
    (4, 1, False, "d_k must be a whole number from 2 to 64"),
    (4, 65, False, "d_k must be a whole number from 2 to 64"),
    (8, 64, False, "is over 256"),
    ("2.5", 8, False, "h must be a whole number"),
    ("", 8, False, "h must be a whole number"),
])
def test_bad_sizes_get_one_line_then_a_good_size_works(page, h, d_k, budget, words):
    p, _ = page
    reset(p, 1)
    set_size(p, 1, h, d_k, budget)
    assert words in message(p, 1)
    assert panel(p, 1).locator(".mha-train-go").is_disabled()
    set_size(p, 1, 2, 8)
    wait_state(p, 1, ["ready"])
    assert message(p, 1) == ""


def test_train_twice_pause_resume_reset(page):
    p, _ = page
    ready(p, 1, 2, 8)
    p.evaluate("mhaTrainer.panels[1].start(); mhaTrainer.panels[1].start()")
    wait_state(p, 1, ["running"])
    p.evaluate("mhaTrainer.panels[1].start()")
    assert "Already training" in panel(p, 1).locator(".mha-train-status").inner_text()
    assert panel(p, 1).locator("input[id$='-h']").is_disabled(), "no size change mid-run"
    panel(p, 1).locator(".mha-train-pause").click()
    wait_state(p, 1, ["paused"])
    at = p.evaluate("mhaTrainer.panels[1].step")
    assert "Paused at step" in panel(p, 1).locator(".mha-train-status").inner_text()
    panel(p, 1).locator(".mha-train-go").click()  # Resume
    p.wait_for_function("mhaTrainer.panels[1].step > %d" % at)
    panel(p, 1).locator(".mha-train-reset").click()
    assert "was discarded" in panel(p, 1).locator(".mha-train-status").inner_text()
    wait_state(p, 1, ["ready"])


def test_divergence_stops_with_one_line_and_no_nan(page):
    """A weight made infinite (a test hook) makes the loss NaN: the page
    says so, stops, and draws nothing non-finite."""
    p, _ = page
    ready(p, 1, 2, 8)
    p.evaluate("mhaTrainer.panels[1].worker.postMessage({type: 'poison'})")
    panel(p, 1).locator(".mha-train-go").click()
    wait_state(p, 1, ["diverged"])
    assert "The loss diverged" in message(p, 1)
    losses = p.evaluate("mhaTrainer.panels[1].losses")
    assert all(np.isfinite(losses))
    reset(p, 1)
    wait_state(p, 1, ["ready"])


def test_empty_sentence_hides_the_pictures(page):
    p, _ = page
    box = panel(p, 1).locator(".mha-train-sentence")
    box.fill("   ")
    assert "Type a sentence" in panel(p, 1).locator(".mha-train-note").inner_text()
    assert panel(p, 1).locator(".mha-train-heads").is_hidden()
    box.fill("the cat sat")
    p.wait_for_function("mhaTrainer.panels[1].lastAttention.L === 3")
    assert panel(p, 1).locator(".mha-train-heads").is_visible()


def test_leaving_mid_run_asks_first(page):
    p0, blocked = page
    p = p0.context.new_page()  # same offline context
    p.goto(p0.url)
    p.locator(".mha-trainer").scroll_into_view_if_needed()
    p.wait_for_function("window.mhaTrainer && mhaTrainer.panels.length === 2 && "
                        "mhaTrainer.panels[0].state === 'ready'", timeout=60_000)
    set_size(p, 0, 2, 8)
    wait_state(p, 0, ["ready"])
    panel(p, 0).locator(".mha-train-go").click()
    wait_state(p, 0, ["running"])
    dialogs = []
    p.on("dialog", lambda d: (dialogs.append(d.type), d.dismiss()))
    p.close(run_before_unload=True)
    p0.wait_for_timeout(1000)
    assert dialogs == ["beforeunload"]
    assert not p.is_closed(), "dismissing the question keeps the page and its model"
    p.close()


def test_file_page_says_why_and_the_precomputed_explorer_works(page):
    p0, _ = page
    context = p0.context.browser.new_context(viewport={"width": 1280, "height": 900})
    reached = []
    context.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:")
                  else (reached.append(r.request.url), r.abort()))
    p = context.new_page()
    try:
        p.goto((SITE / PAGE).as_uri())
        p.wait_for_function("window.mhaTrainer && mhaTrainer.panels.length === 2")
        assert "served over http" in panel(p, 0).locator(".mha-train-message").inner_text()
        assert panel(p, 0).locator(".mha-train-go").is_disabled()
        p.wait_for_function("window.mhaExplorer && mhaExplorer.engine === 'failed'")
        assert p.locator("#mha-explorer .mha-grid canvas").count() > 0
        assert reached == []
    finally:
        context.close()
