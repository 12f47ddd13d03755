"""Positions: what attention does not know, and three ways to tell it.

Attention alone is **permutation-equivariant**: permute the tokens of ``X``
and the outputs are permuted the same way, ``MHA(P X) = P MHA(X)``, because
every score ``q_i . k_j`` depends only on the two tokens' vectors, not on
where they sit. Word order has to be put in:

- **learned** positions: a trained table ``E_pos`` (max_len, d_model) whose
  row ``t`` is added to token ``t``'s embedding (BERT, GPT-2, MiniLM);
- **sinusoidal** positions (Vaswani et al. 2017, section 3.5), a fixed table::

      PE[t, 2i]   = sin(t / base^(2i/d_model))
      PE[t, 2i+1] = cos(t / base^(2i/d_model))          base = 10000

- **rotary** positions (Su et al. 2021, RoFormer), applied to queries and keys
  inside every head instead of to the input: each pair of coordinates
  ``(x_2i, x_2i+1)`` of the vector at position ``t`` is rotated by the angle
  ``t * theta_i``, ``theta_i = base^(-2i/d)``. Rotations compose, so
  ``R(t_q) q . R(t_k) k = q . R(t_k - t_q) k``: the score depends on the
  positions only through the **offset** ``t_k - t_q``.
"""
from __future__ import annotations

import torch

from ._validate import (
    InputError,
    InputTypeError,
    check_bool,
    check_finite,
    check_float_dtype,
    check_positive_int,
    check_real,
    check_size,
    check_tensor,
    describe,
)
from .block import layer_norm

# --- input checks: the rules of this module's public functions -----------

def check_base(base) -> float:
    return check_real("base", base, low=1.0, low_open=True, high=1e12,
                      what="a number > 1 (10000 in the paper)")


def check_sinusoidal(L, d_model, base, dtype) -> None:
    L = check_positive_int("L (positions)", L)
    d_model = check_positive_int("d_model", d_model)
    if d_model % 2:
        raise InputError(f"d_model must be even (sin and cos pairs); got "
                         f"{d_model}. Use {d_model + 1} or {d_model - 1}.")
    check_size("sinusoidal_positions (L x d_model)", L * d_model)
    check_base(base)
    check_float_dtype("dtype", dtype)


def check_positions(positions, L: int | None, *, integer=False,
                    allow_nonfinite=False) -> None:
    """A 1-D tensor of positions (with ``L`` entries when given)."""
    if not isinstance(positions, torch.Tensor):
        raise InputTypeError(f"positions must be a 1-D torch.Tensor; got "
                             f"{describe(positions)}. Write torch.tensor(positions) "
                             "or torch.arange(L).")
    if positions.dtype == torch.bool or positions.is_complex() or (
            integer and positions.is_floating_point()):
        want = "integer row numbers (torch.long)" if integer else "numbers"
        raise InputError(f"positions must be {want}; got dtype "
                         f"{str(positions.dtype).replace('torch.', '')}. Pass "
                         + ("positions.long()." if integer else "positions.float()."))
    if positions.ndim != 1 or (L is not None and positions.shape[0] != L):
        want = "(L,)" if L is None else f"(L,) = ({L},)"
        raise InputError(f"positions must have shape {want}; got "
                         f"{tuple(positions.shape)}.")
    if positions.is_floating_point():
        check_finite("positions", positions, allow_nonfinite)


def check_rotary_angles(positions, d, base) -> None:
    check_positions(positions, None)
    d = check_even_width("d (head width)", d)
    check_size("rotary_angles (L x d/2)", positions.numel() * d // 2)
    check_base(base)


def check_even_width(name: str, d) -> int:
    d = check_positive_int(name, d, 2**20, "memory")
    if d % 2:
        raise InputError(f"rotary positions rotate pairs of coordinates, so the "
                         f"head width {name} must be even; got {d}.")
    return d


def check_rotary(x, positions, base, allow_nonfinite) -> None:
    check_tensor("x", x, min_ndim=2, legend="(..., L, d) of queries or keys")
    check_bool("allow_nonfinite", allow_nonfinite)
    L, d = x.shape[-2:]
    if L == 0:
        raise InputError(f"x has no tokens: shape {tuple(x.shape)}; L must be >= 1.")
    check_even_width("d (x.shape[-1])", d)
    if positions is not None:
        check_positions(positions, L)
    check_base(base)
    check_finite("x", x, allow_nonfinite)


def check_embed_with_positions(input_ids, model, positions, use_positions) -> None:
    # imported here, not at the top: ``import mhacourse`` loads positions but
    # not the real model's modules (they load on first use)
    from .bert import check_ids
    from .bert_weights import Bert

    if not isinstance(model, Bert):
        raise InputTypeError(f"model must be a model loaded with "
                             f"mhacourse.load_model(); got {describe(model)}.")
    check_ids(input_ids, model.config)
    check_bool("use_positions", use_positions)
    if positions is None:
        return
    if not use_positions:
        raise InputError("positions were given but use_positions=False would "
                         "ignore them: pass one or the other.")
    check_positions(positions, input_ids.shape[1], integer=True)
    n = model.E_pos.shape[0]
    lo, hi = int(positions.min()), int(positions.max())
    if lo < 0 or hi >= n:
        raise InputError(f"positions must be rows of the position table, "
                         f"0..{n - 1}; got values {lo}..{hi} (a negative row "
                         "would wrap around).")


def sinusoidal_positions(L: int, d_model: int, base: float = 10000.0,
                         dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The 2017 paper's fixed table: ``PE[t, 2i] = sin(t / base^(2i/d))``,
    ``PE[t, 2i+1] = cos(t / base^(2i/d))``.

    Shapes: returns (L, d_model); ``d_model`` must be even.
    """
    check_sinusoidal(L, d_model, base, dtype)
    t = torch.arange(L, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,)
    angle = t / base ** (two_i / d_model)  # (L, d_model/2)
    pe = torch.empty(L, d_model, dtype=torch.float64)
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe.to(dtype)  # (L, d_model)


def rotary_angles(positions: torch.Tensor, d: int, base: float = 10000.0):
    """``t * theta_i`` with ``theta_i = base^(-2i/d)``, i = 0..d/2-1.

    Shapes: ``positions`` (L,) -> (L, d/2) angles, float64.
    """
    check_rotary_angles(positions, d, base)
    return _angles(positions, d, base)


def _angles(positions: torch.Tensor, d: int, base: float) -> torch.Tensor:
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    return positions.to(torch.float64)[:, None] * theta[None, :]  # (L, d/2)


def rotary(x: torch.Tensor, positions: torch.Tensor | None = None,
           base: float = 10000.0, allow_nonfinite: bool = False) -> torch.Tensor:
    """Rotate each pair ``(x_2i, x_2i+1)`` of the vector at position ``t`` by
    ``t * theta_i`` (RoFormer's interleaved pairs)::

        y_2i   = x_2i cos(t theta_i) - x_2i+1 sin(t theta_i)
        y_2i+1 = x_2i sin(t theta_i) + x_2i+1 cos(t theta_i)

    Shapes: ``x`` (..., L, d) with d even; ``positions`` (L,), default
    ``0..L-1`` -> (..., L, d). Applied to queries and keys, never to values.
    NaN or inf in ``x`` is refused unless ``allow_nonfinite=True``.
    """
    check_rotary(x, positions, base, allow_nonfinite)
    return _rotary_core(x, positions, base)


def _rotary_core(x: torch.Tensor, positions: torch.Tensor | None = None,
                base: float = 10000.0) -> torch.Tensor:
    """:func:`rotary` with no checks, the form a model's attention calls
    (``_mha_core(..., rotate=...)``, :mod:`mhacourse.real_lm`).
    Shapes: ``x`` (..., L, d), ``positions`` (L,) -> (..., L, d)."""
    L, d = x.shape[-2:]
    if positions is None:
        positions = torch.arange(L)
    angle = _angles(positions, d, base)  # (L, d/2), float64
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each
    y = torch.empty_like(x)
    y[..., 0::2] = x1 * cos - x2 * sin
    y[..., 1::2] = x1 * sin + x2 * cos
    return y  # (..., L, d)


def embed_with_positions(input_ids: torch.Tensor, model,
                         positions: torch.Tensor | None = None,
                         use_positions: bool = True) -> torch.Tensor:
    """A BERT-style embedding with the position table under our control:
    ``LayerNorm(E_tok[t] + E_pos[positions] + E_type[0])``.

    ``positions`` (L,) picks which row of ``E_pos`` each token gets
    (default ``0..L-1``: exactly :func:`mhacourse.bert.embed`; a
    permutation shuffles them); ``use_positions=False`` leaves them out. ``model`` is a
    :class:`mhacourse.bert.Bert`. Shapes: ``input_ids`` (B, L) ->
    (B, L, d_model).
    """
    check_embed_with_positions(input_ids, model, positions, use_positions)
    B, L = input_ids.shape
    x = model.E_tok[input_ids]  # (B, L, d_model)
    if use_positions:
        positions = torch.arange(L) if positions is None else positions
        x = x + model.E_pos[positions]  # (B, L, d_model)
    x = x + model.E_type[0]  # segment 0, as mhacourse.bert.embed
    return layer_norm(x, model.gamma_0, model.beta_0, model.config.eps)
