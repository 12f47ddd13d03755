"""What a layer costs: its parameters, and the FLOPs of its matrix products.

Pure computation (chapter 7 derives the formula, chapter 9 measures it).
"""
from __future__ import annotations

from ._validate import InputTypeError, check_heads, check_positive_int, describe


def mha_flops(B: int, L: int, d_model: int, h: int = 1) -> dict:
    """FLOPs of the matrix products of one self-attention forward pass,
    2 per multiply-add (as ``torch.utils.flop_counter`` counts them).

    ``projections``: X W_Q, X W_K, X W_V, Concat W_O: ``4 * 2 B L d_model^2``
    ``attention``: Q K^T and A V, all heads: ``2 * 2 B L^2 d_model``
    (h heads of width d_k = d_model / h, so ``h`` cancels). The softmax,
    the scaling and the biases (lower order) are not counted.
    """
    for name, v in (("B", B), ("L", L)):
        check_positive_int(name, v)
    check_heads(d_model, h)
    proj = 4 * 2 * B * L * d_model * d_model
    attn = 2 * 2 * B * L * L * d_model
    return {"projections": proj, "attention": attn, "total": proj + attn}


def check_module(module) -> None:
    if not hasattr(module, "parameters") or not callable(module.parameters):
        raise InputTypeError(f"module must be a torch.nn.Module (a model or a "
                             f"layer); got {describe(module)}.")


def n_params(module) -> int:
    """Number of learned numbers of a ``torch.nn.Module``: the sum of
    ``p.numel()`` over ``module.parameters()``."""
    check_module(module)
    return sum(p.numel() for p in module.parameters())
