"""A head's name, ``mc.head_name``: the code's indices (from 0) as the
course's name (from 1), and the package's one-line error for anything that is
not an index."""
import numpy as np
import pytest
import torch
from bad_input_checks import assert_the_packages_error

import mhacourse as mc
from mhacourse.heads import head_name


@pytest.mark.parametrize("layer, head, name", [
    (0, 0, "L1H1"),          # the first layer's first head
    (0, 1, "L1H2"),
    (1, 0, "L2H1"),
    (5, 11, "L6H12"),        # MiniLM's last head
    (np.int64(2), np.int32(3), "L3H4"),           # NumPy integers
    (torch.tensor(1), torch.tensor(0), "L2H1"),   # 0-d integer tensors
])
def test_names_count_from_1_indices_from_0(layer, head, name):
    assert head_name(layer, head) == name
    assert mc.head_name is head_name  # exported at the top level


def test_the_name_of_out_attentions_l_b_i():
    """The docstring's rule: ``attentions[l][b, i]`` is ``head_name(l, i)``,
    for every head of a (2 layers, 3 heads) stack, each name once."""
    attentions = [torch.zeros(1, 3, 4, 4) for _ in range(2)]
    names = [head_name(l, i) for l, A in enumerate(attentions)
             for i in range(A.shape[1])]
    assert names == ["L1H1", "L1H2", "L1H3", "L2H1", "L2H2", "L2H3"]


@pytest.mark.parametrize("layer, head, err, arg, words", [
    (-1, 0, mc.InputError, "layer", "layer = -1 is not a layer index"),
    (0, -1, mc.InputError, "head", "head = -1 is not a head index"),
    (-6, 3, mc.InputError, "layer", "layer % n_layers"),
    (1.0, 0, mc.InputTypeError, "layer", "layer must be a layer index"),
    (0, 2.5, mc.InputTypeError, "head", "head must be a head index"),
    (True, 0, mc.InputTypeError, "layer", "got bool True"),
    (0, False, mc.InputTypeError, "head", "got bool False"),
    ("1", 0, mc.InputTypeError, "layer", "without quotes"),
    (None, 0, mc.InputTypeError, "layer", "got None"),
    (0, torch.tensor(1.0), mc.InputTypeError, "head", "Tensor (float32"),
    (0, torch.tensor([1, 2]), mc.InputTypeError, "head", "shape (2,)"),
])
def test_bad_indices_raise_the_packages_error(layer, head, err, arg, words):
    with pytest.raises(err) as info:
        head_name(layer, head)
    assert words in str(info.value), str(info.value)
    assert_the_packages_error(info, arg)


def test_a_negative_index_is_not_taken_for_a_name():
    """-1 would be the last layer in Python, but head_name does not know how
    many there are: the message says so and gives the fix."""
    with pytest.raises(mc.InputError, match=r"counts from the end.*pass head % h"):
        head_name(0, -1)
