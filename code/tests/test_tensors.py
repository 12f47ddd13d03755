"""mhacourse.tensors.exact: the worked examples' small float64 matrices."""
import pytest
import torch

import mhacourse as mc
from mhacourse.tensors import exact


def test_exact_is_float64_with_the_given_entries():
    m = exact([[1, 2, 3], [4, 5, 6]])
    assert m.dtype == torch.float64
    assert m.shape == (2, 3)
    assert m.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    # whole numbers stay exact through the chapters' products
    assert (m @ m.T).tolist() == [[14.0, 32.0], [32.0, 77.0]]


@pytest.mark.parametrize("rows, err, words", [
    ([[1, 2], [3]], mc.InputError, "rectangular"),
    ("[[1, 2]]", mc.InputTypeError, "list of rows"),
    (torch.ones(2, 2), mc.InputTypeError, "list of rows"),
    ([["a", "b"]], mc.InputError, "numbers"),
])
def test_exact_bad_input_is_one_clear_message(rows, err, words):
    with pytest.raises(err, match=words):
        exact(rows)
