"""The attention explorer, driven as a reader would: set controls, type text."""
import re

import pytest
import torch

from mhacourse import bert
from mhacourse import explorer as ex
from mhacourse import tiny_model as tm
from mhacourse.plotting_html import heads_html
from mhacourse.widgets import AttentionExplorer, static_minilm_explorer, static_tiny_explorer


def n_heads_drawn(html: str) -> int:
    return len(re.findall(r"<figure", html))


def is_message(html: str) -> bool:
    return "role='status'" in html and "<figure" not in html


@pytest.fixture(scope="module")
def explorer():
    return AttentionExplorer(source="untrained", h=2, d_k=8, layer=1)


def test_changing_h_changes_the_heads_and_matches_the_package(explorer):
    explorer.source.value = "untrained"
    explorer.h.value, explorer.d_k.value = 3, 8
    assert n_heads_drawn(explorer.output.value) == 3
    explorer.h.value = 5
    assert n_heads_drawn(explorer.output.value) == 5
    view = ex.tiny_view(explorer.text.value, 5, 8, trained=False, layer=1)
    assert explorer.output.value == heads_html(view.weights, view.tokens, view.titles,
                                               header=view.header)
    model = tm.TinyTransformer(tm.TinyConfig(h=5, d_k=8), seed=0)
    tokens, attention = tm.attention_on(model, explorer.text.value)
    assert torch.allclose(view.weights, attention[0])


def test_typing_a_sentence_redraws(explorer):
    explorer.source.value = "untrained"
    explorer.h.value, explorer.d_k.value = 2, 8
    before = explorer.output.value
    explorer.text.value = "the cat sat on the mat"
    after = explorer.output.value
    assert after != before
    assert ">mat<" in after and ">street<" not in after


def test_minilm_source_shows_12_heads_of_the_real_model(explorer):
    explorer.source.value = "MiniLM"
    explorer.layer.value = 3
    explorer.text.value = "The robot sat on the floor because it was tired."
    assert n_heads_drawn(explorer.output.value) == 12
    out = bert.encode(explorer.text.value)
    view = explorer.view()
    assert torch.allclose(view.weights, out.attentions[2][0])
    assert "layer 3 of 6" in explorer.output.value


def test_trained_source_reports_accuracy(explorer):
    explorer.source.value = "trained"
    explorer.h.value, explorer.d_k.value, explorer.layer.value = 4, 16, 2
    explorer.text.value = ex.EXAMPLES[1]
    assert n_heads_drawn(explorer.output.value) == 4
    assert "held-out accuracy" in explorer.output.value


@pytest.mark.parametrize("setting, message", [
    ({"text": ""}, "Type a sentence"),
    ({"text": "    "}, "Type a sentence"),
    ({"text": "word " * 40}, "at most 16"),
    ({"text": "zyxq wvut qqqq"}, "vocabulary"),
    ({"d_k": 0}, "d_k (width of one head) must be a positive integer; got 0"),
    ({"h": 0}, "h (number of heads) must be a positive integer; got 0"),
    ({"h": 3, "d_model": 16}, "h = 3 heads cannot split d_model = 16"),
    ({"h": 40}, "at most 16"),
    ({"source": "trained", "h": 3}, "No trained model for h = 3"),
    ({"source": "MiniLM", "text": "word " * 40}, "longer than 32 word pieces"),
])
def test_bad_input_shows_one_line_and_the_explorer_keeps_working(setting, message):
    e = AttentionExplorer(source="untrained", h=2, d_k=8, layer=1)
    for name, value in setting.items():
        getattr(e, name).value = value
    assert is_message(e.output.value), e.output.value[:200]
    assert message in e.output.value.replace("&#x27;", "'")
    assert "Traceback" not in e.output.value
    # ... and recovers once the input is fixed
    e.source.value, e.h.value, e.d_k.value, e.d_model.value = "untrained", 2, 8, 0
    e.text.value = ex.EXAMPLES[0]
    assert n_heads_drawn(e.output.value) == 2


def test_static_explorers_hold_every_combination():
    box = static_tiny_explorer(sentences=ex.EXAMPLES[:2], hs=(1, 2), d_ks=(8,),
                               default_h=2, default_d_k=8)
    controls, stack = box.children
    assert [c.description for c in controls.children] == \
        ["Weights", "h (heads)", "d_k", "Layer", "Sentence"]
    assert [c.index for c in controls.children] == [0, 1, 0, 1, 0]  # h = 2, layer 2
    # trained, h=2, d_k=8, layer 1
    leaves = stack.children[0].children[1].children[0].children[0].children
    assert len(leaves) == 2 and n_heads_drawn(leaves[0].value) == 2
    assert "layer 1 of 2" in leaves[0].value
    m = static_minilm_explorer(sentences=ex.EXAMPLES[:1], layers=(1, 6))
    assert n_heads_drawn(m.children[1].children[1].children[0].value) == 12
