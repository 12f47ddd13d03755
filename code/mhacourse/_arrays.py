"""Tensors and array-likes as NumPy arrays: the one conversion that the
plotting modules and the exercise checkers use.
"""
from __future__ import annotations

import numpy as np

from ._errors import is_tensor


def to_numpy(a, dtype=np.float64) -> np.ndarray:
    """``a`` (a tensor on any device, with or without grad, or anything
    ``np.asarray`` takes) as a NumPy array of ``dtype``; same shape.

    The default, float64, holds every float16, bfloat16 and float32 value
    exactly, and every integer a picture numbers its cells with.
    ``dtype=None`` keeps the tensor's own dtype (bfloat16, which NumPy lacks,
    becomes float32).
    """
    if is_tensor(a):  # told without importing torch (the NumPy twin needs none)
        a = a.detach().cpu()
        if str(a.dtype) == "torch.bfloat16":
            a = a.float()  # exact: bfloat16 is float32 with a shorter mantissa
        a = a.numpy()
    return np.asarray(a, dtype=dtype)
