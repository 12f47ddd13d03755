"""Multi-head attention, in the two forms the course compares.

    head_i    = Attention(X W_Q^i, X W_K^i, X W_V^i)            i = 1..h
    MultiHead = Concat(head_1, ..., head_h) W_O                  (Vaswani et al. 2017)

Row-vector convention, as in the paper: ``X`` is (B, L, d_model) and
``X @ W_Q`` projects it. ``W_Q^i`` is the i-th block of d_k **columns** of
``W_Q`` (d_model, d_model): every head reads all d_model input dimensions.

Names and their ``torch.nn.MultiheadAttention`` counterparts (that module
stores weights transposed, as ``y = x @ weight.T + bias``):

======================  ================================================
course                  ``nn.MultiheadAttention``
======================  ================================================
``query, key, value``   ``query, key, value`` (``batch_first=True``)
``d_model``             ``embed_dim``
``h``                   ``num_heads``
``d_k``                 ``head_dim`` (``embed_dim // num_heads``)
``W_Q, W_K, W_V``       ``in_proj_weight[0:d].T``, ``[d:2d].T``, ``[2d:3d].T``
``b_Q, b_K, b_V``       ``in_proj_bias[0:d]``, ``[d:2d]``, ``[2d:3d]``
``W_O, b_O``            ``out_proj.weight.T``, ``out_proj.bias``
``attn_mask``           ``attn_mask``: (L, S) or (B*h, L, S), bool with
                        ``True`` = blocked, or float added to the scores
``key_padding_mask``    ``key_padding_mask``: (B, S), ``True`` = padded
``(output, weights)``   ``(attn_output, attn_output_weights)``, with
                        ``average_attn_weights=False``
======================  ================================================

One signature for every form of the layer, learned once::

    f(query, key, value, w, h, *, attn_mask=None, key_padding_mask=None,
      return_concat=False, allow_nonfinite=False) -> (output, weights)

The three forms here, :func:`mhacourse.gqa.grouped_query_attention` (which
adds ``h_kv`` after ``h``; its ``w.W_K``, ``w.W_V`` are narrower) and the
NumPy twins in :mod:`mhacourse.reference_np` all take it (less
``return_concat`` where there is no concat: the loop and the fused path).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn

from ._validate import (
    FLOAT_DTYPES,
    InputError,
    InputTypeError,
    check_all_finite,
    check_dtype,
    check_finite,
    check_head_index,
    check_heads,
    check_ndim,
    check_positional,
    check_positive_int,
    check_same_batching,
    check_same_dtype,
    check_seed,
    check_tensor,
    describe,
    unbatched_padding_mask,
)
from .attention import _attention_core, scaled_dot_product_attention
from .heads import (
    _merge_heads_core,
    _share_kv_heads,
    _split_heads_core,
    split_heads,
)
from .masks import combine_masks, to_sdpa_mask

#: Largest d_model the package builds weights for: 4 matrices of
#: 8192 x 8192 float32 numbers are 1 GiB.
MAX_D_MODEL = 8192

BATCH_FIRST = (
    "The course's functions are batch-first, (B, L, d_model), like "
    "nn.MultiheadAttention(batch_first=True); if your tensors are "
    "sequence-first, (L, B, d_model) (PyTorch's default batch_first=False), "
    "pass x.transpose(0, 1).")


@dataclass
class MHAWeights:
    """The four projections of one multi-head attention layer.

    ``W_*`` are (d_model, d_model) and act as ``x @ W``; ``b_*`` are (d_model,)
    or ``None``. For grouped-query attention (:mod:`mhacourse.gqa`) ``W_K``
    and ``W_V`` are narrower, (d_model, h_kv*d_k), and ``b_K``, ``b_V``
    (h_kv*d_k,): the only place the weights of the variants differ.
    """

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    W_O: torch.Tensor
    b_Q: torch.Tensor | None = None
    b_K: torch.Tensor | None = None
    b_V: torch.Tensor | None = None
    b_O: torch.Tensor | None = None

    def __post_init__(self) -> None:
        # types and shapes only (no value checks): this also runs inside the
        # exported core, through MultiHeadAttention.weights()
        if not isinstance(self.W_Q, torch.Tensor) or self.W_Q.ndim != 2:
            raise InputTypeError(
                f"W_Q must be a (d_model, d_model) torch.Tensor; got "
                f"{describe(self.W_Q)}. Make weights with "
                "mc.random_weights(d_model, h).")
        d = self.W_Q.shape[0]
        kv = _kv_width(self.W_K, d)  # d, or h_kv*d_k for grouped-query weights
        for f in fields(self):
            t = getattr(self, f.name)
            cols = kv if f.name[-1] in "KV" else d
            want = (d, cols) if f.name.startswith("W") else (cols,)
            if t is None and f.name.startswith("b"):
                continue
            if not isinstance(t, torch.Tensor):
                raise InputTypeError(
                    f"{f.name} must be a torch.Tensor of shape {want}; got "
                    f"{describe(t)}.")
            if t.dtype not in FLOAT_DTYPES:
                raise InputError(
                    f"{f.name} is {str(t.dtype).replace('torch.', '')}: weights "
                    f"must be floating-point; pass {f.name}.float().")
            if t.dtype != self.W_Q.dtype:
                raise InputError(
                    f"{f.name} is {str(t.dtype).replace('torch.', '')} but W_Q is "
                    f"{str(self.W_Q.dtype).replace('torch.', '')}: give all "
                    "weights one dtype (`w.to(dtype)`).")
            if tuple(t.shape) != want:
                kind = ("" if cols == d else
                        f", W_K's width h_kv*d_k = {kv} for grouped-query weights")
                raise InputError(
                    f"{f.name} must have shape {want} (d_model = {d}{kind}); "
                    f"got {tuple(t.shape)}."
                )

    @property
    def d_model(self) -> int:
        return self.W_Q.shape[0]

    @property
    def d_kv(self) -> int:
        """Columns of ``W_K`` and ``W_V``: ``h_kv * d_k`` (``d_model`` for
        multi-head attention, where ``h_kv = h``)."""
        return self.W_K.shape[1]

    def to(self, dtype: torch.dtype) -> "MHAWeights":
        """The same weights in another dtype (e.g. ``torch.float64``)."""
        check_dtype("dtype", dtype)
        return MHAWeights(**{
            f.name: None if getattr(self, f.name) is None
            else getattr(self, f.name).to(dtype)
            for f in fields(self)
        })


def _kv_width(W_K, d: int) -> int:
    """The width of ``W_K`` (and ``W_V``): ``d`` = d_model, or a divisor of it
    (``h_kv * d_k`` divides ``h * d_k``) for grouped-query weights."""
    if (isinstance(W_K, torch.Tensor) and W_K.ndim == 2 and W_K.shape[0] == d
            and 0 < W_K.shape[1] <= d and d % W_K.shape[1] == 0):
        return W_K.shape[1]
    return d  # anything else: reported against the (d_model, d_model) shape


def random_weights(
    d_model: int, h: int = 1, bias: bool = True, seed: int | None = 0,
    dtype: torch.dtype = torch.float32,
) -> MHAWeights:
    """Random weights, entries ~ N(0, 1/d_model), so projections keep unit scale.

    ``h`` is only checked (``d_model % h == 0``): the weights of h heads and of
    one head are the same four matrices. ``seed=None`` draws from torch's
    global random state.
    """
    check_heads(d_model, h)
    check_positive_int("d_model", d_model, MAX_D_MODEL,
                       "memory: four d_model x d_model matrices")
    check_dtype("dtype", dtype)
    g = None if seed is None else torch.Generator().manual_seed(
        check_seed("seed", seed))

    def mat():
        return torch.randn(d_model, d_model, generator=g, dtype=dtype) / d_model**0.5

    def vec():
        return 0.1 * torch.randn(d_model, generator=g, dtype=dtype) if bias else None

    return MHAWeights(mat(), mat(), mat(), mat(), vec(), vec(), vec(), vec())


def project(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None):
    """``x W + b``: ``x`` (..., d_in) @ ``W`` (d_in, d_out) (+ ``b``
    (d_out,)) -> (..., d_out). Checks its input, then runs :func:`_project`
    (the unchecked form the cores call: ``Q = X W_Q``)."""
    _check_projection(x, W, b, names=("x", "W", "b"))
    check_all_finite(x=x, W=W, b=b)
    return _project(x, W, b)


def _project(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None):
    """``x W + b``, (..., d_in) @ (d_in, d_out) -> (..., d_out): no checks."""
    y = x @ W
    return y if b is None else y + b


def head_slice(W: torch.Tensor, b: torch.Tensor | None, i: int, h: int):
    """Head ``i``'s projection: columns ``i*d_k:(i+1)*d_k`` of ``W`` (and ``b``).

    Shapes: ``W`` (d_model, d_model) -> ``W^i`` (d_model, d_k). ``W^i`` has all
    d_model **rows**: head i reads every input dimension.
    """
    check_tensor("W", W, ndim=2, legend="(d_model, d_model)")
    if b is not None:
        check_tensor("b", b, ndim=1, legend="(d_model,)")
        if b.shape[0] != W.shape[1]:
            raise InputError(f"b must have one entry per column of W, "
                             f"{W.shape[1]}; got shape {tuple(b.shape)}.")
    d_k = check_heads(W.shape[1], h)
    i = check_head_index("i", i, h)
    cols = slice(i * d_k, (i + 1) * d_k)
    return W[:, cols], (None if b is None else b[cols])


def output_projection(concat: torch.Tensor, W_O: torch.Tensor, b_O=None):
    """Checked :func:`_output_projection_core`: ``Concat(head_1..head_h) W_O + b_O``,
    (B, L, d_model) -> (B, L, d_model)."""
    _check_projection(concat, W_O, b_O)
    return _output_projection_core(concat, W_O, b_O)


def _output_projection_core(concat: torch.Tensor, W_O: torch.Tensor, b_O=None):
    """``Concat(head_1, ..., head_h) W_O + b_O``, the formula chapter 6
    derives, with no input checks: every output coordinate mixes all
    ``h * d_k`` numbers of the concatenation; ``b_O`` belongs to no head.

    Shapes: ``concat`` (B, L, h*d_k), ``W_O`` (h*d_k, d_model),
    ``b_O`` (d_model,) or ``None`` -> (B, L, d_model).
    """
    out = concat @ W_O  # (B, L, d_model)
    return out if b_O is None else out + b_O


def head_contributions(concat: torch.Tensor, W_O: torch.Tensor, h: int):
    """What each head adds to the output: ``head_i W_O^i``.

    ``W_O^i`` are rows ``i*d_k:(i+1)*d_k`` of ``W_O``, so
    ``concat @ W_O == sum_i head_i @ W_O^i`` (block matrix product).
    Shapes: ``concat`` (B, L, d_model) -> (B, h, L, d_model); summing axis 1
    gives ``concat @ W_O`` (without ``b_O``).
    """
    _check_projection(concat, W_O, None)
    check_ndim("concat", concat.shape, 3, "(B, L, d_model)")
    check_finite("concat", concat, option=False)
    check_finite("W_O", W_O, option=False)
    heads = split_heads(concat, h)  # (B, h, L, d_k)
    d_k = heads.shape[-1]
    W_O_i = W_O.reshape(h, d_k, W_O.shape[1])  # (h, d_k, d_model): row blocks
    return heads @ W_O_i[None]  # (B, h, L, d_model)


def _check_projection(concat, W_O, b_O, names=("concat", "W_O", "b_O")) -> None:
    """Types and shapes only (no value checks: output_projection also runs
    inside the exported core, _mha_core): ``concat`` (..., d_in) against
    ``W_O`` (d_in, d_out) and ``b_O`` (d_out,); ``names`` as the caller
    calls them."""
    x, W, b = names
    check_tensor(x, concat, min_ndim=1, legend="(..., d_model)")
    check_tensor(W, W_O, ndim=2, legend="(d_model, d_model)")
    if b_O is not None:
        check_tensor(b, b_O, ndim=1, legend="(d_model,)")
        if b_O.shape[0] != W_O.shape[1]:
            raise InputError(f"{b} must have shape ({W_O.shape[1]},), one entry "
                             f"per column of {W}; got {tuple(b_O.shape)}.")
    if concat.shape[-1] != W_O.shape[0]:
        raise InputError(
            f"{x} must end in d_model = {W_O.shape[0]} (the rows of {W}); "
            f"got {x} {tuple(concat.shape)} and {W} {tuple(W_O.shape)}.")
    check_same_dtype(**{x: concat, W: W_O, b: b_O})


def check_weights(w, h, h_kv: int | None = None) -> int:
    """Check ``w`` is an :class:`MHAWeights` whose d_model ``h`` heads split,
    with ``W_K``, ``W_V`` of ``h_kv * d_k`` columns (``h_kv = h`` when
    ``None``: multi-head attention); return ``d_k``."""
    if not isinstance(w, MHAWeights):
        hint = (" (it looks like h and w are swapped: the order is query, key, "
                "value, w, h)" if isinstance(h, MHAWeights) else "")
        raise InputTypeError(
            f"w must be an MHAWeights (from mc.random_weights(d_model, h)); got "
            f"{describe(w)}{hint}.")
    d_k = check_heads(w.d_model, h)
    if h_kv is None and w.d_kv != w.d_model:
        raise InputError(
            f"w.W_K and w.W_V have {w.d_kv} columns, not d_model = {w.d_model}: "
            f"these are grouped-query weights ({w.d_kv // d_k} key/value heads "
            f"of d_k = {d_k}); call mc.gqa.grouped_query_attention(query, key, "
            f"value, w, h, h_kv={w.d_kv // d_k}).")
    if h_kv is not None and w.d_kv != h_kv * d_k:
        raise InputError(
            f"w.W_K must have shape (d_model, h_kv*d_k) = ({w.d_model}, "
            f"{h_kv * d_k}) for h_kv = {h_kv}; got {tuple(w.W_K.shape)}.")
    return d_k


def check_batch_first(query, key, value) -> None:
    """``query`` (B, L, d), ``key`` and ``value`` (B, S, d): one batch size
    B for all three, one key length S for key and value (sequence-first
    input usually breaks one of the two)."""
    if key.shape[0] != query.shape[0] or value.shape[0] != query.shape[0]:
        raise InputError(
            f"query (B, L, d), key and value (B, S, d) must share B; got "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}. "
            + BATCH_FIRST)
    if key.shape[1] != value.shape[1]:
        raise InputError(
            f"key and value must share S (one value per key); got key "
            f"{tuple(key.shape)} and value {tuple(value.shape)}.")


def _check_inputs(query, key, value, w: MHAWeights, h: int,
                  allow_nonfinite: bool = False, h_kv: int | None = None) -> int:
    """The checks every form of multi-head attention makes on its input
    (the (B, L, d_model) query and (B, S, d_model) key/value, the weights,
    NaN/inf); ``h_kv`` as in :func:`check_weights`. Returns ``d_k``."""
    d_k = check_weights(w, h, h_kv)
    for name, t in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, t, ndim=3, legend="(B, tokens, d_model)")
        if t.shape[-1] != w.d_model:
            raise InputError(
                f"{name} must end in d_model = {w.d_model} (the weights' size); "
                f"got shape {tuple(t.shape)}."
            )
        if t.shape[1] == 0:
            raise InputError(f"{name} has no tokens (shape {tuple(t.shape)}): "
                             "attention needs at least one.")
        if t.shape[0] == 0:
            raise InputError(f"{name} has an empty batch (shape "
                             f"{tuple(t.shape)}): give at least one sequence.")
    check_batch_first(query, key, value)
    check_same_dtype(query=query, key=key, value=value, weights=w.W_Q)
    seen = set()  # self-attention passes one tensor three times: check it once
    for name, t in (("query", query), ("key", key), ("value", value)):
        if id(t) not in seen:
            check_finite(name, t, allow_nonfinite)
            seen.add(id(t))
    check_all_finite(allow_nonfinite,
                     **{f"w.{f.name}": getattr(w, f.name) for f in fields(w)})
    return d_k


def _unbatched(fn):
    """Let ``fn`` also take (L, d_model) inputs, like ``nn.MultiheadAttention``."""
    params = inspect.signature(fn).parameters.values()
    n_positional = sum(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)

    def wrapper(query, key, value, *args, **kwargs):
        check_positional(fn.__name__, n_positional, 3 + len(args))
        if all(isinstance(t, torch.Tensor) for t in (query, key, value)):
            check_same_batching(query, key, value)
        if isinstance(query, torch.Tensor) and query.ndim == 2:
            for name, t in (("key", key), ("value", value)):
                check_tensor(name, t, ndim=2, legend="(tokens, d_model)")
            try:
                bound = inspect.signature(fn).bind(query, key, value, *args,
                                                   **kwargs)
            except TypeError as e:
                raise InputTypeError(f"{fn.__name__}: {e}.") from None
            if bound.arguments.get("key_padding_mask") is not None:
                bound.arguments["key_padding_mask"] = unbatched_padding_mask(
                    bound.arguments["key_padding_mask"])
            for name in ("query", "key", "value"):
                bound.arguments[name] = bound.arguments[name][None]
            result = fn(*bound.args, **bound.kwargs)
            return tuple(None if r is None else r[0] for r in result)
        return fn(query, key, value, *args, **kwargs)
    wrapper.__doc__, wrapper.__name__ = fn.__doc__, fn.__name__
    wrapper.__wrapped__ = fn
    return wrapper


@_unbatched
def multi_head_attention_loop(
    query, key, value, w: MHAWeights, h: int, *,
    attn_mask=None, key_padding_mask=None, allow_nonfinite: bool = False,
):
    """The explicit form: h separate heads, each with its own W_Q^i, W_K^i, W_V^i.

    Shapes: ``query`` (B, L, d_model), ``key``/``value`` (B, S, d_model).
    Returns ``(output (B, L, d_model), weights (B, h, L, S))``.
    """
    _check_inputs(query, key, value, w, h, allow_nonfinite)
    B, L, _ = query.shape
    S = key.shape[1]
    mask = combine_masks(attn_mask, key_padding_mask, B, h, L, S)
    heads, weights = [], []
    for i in range(h):
        W_Q_i, b_Q_i = head_slice(w.W_Q, w.b_Q, i, h)  # (d_model, d_k)
        W_K_i, b_K_i = head_slice(w.W_K, w.b_K, i, h)
        W_V_i, b_V_i = head_slice(w.W_V, w.b_V, i, h)
        Q_i = _project(query, W_Q_i, b_Q_i)  # (B, L, d_k)
        K_i = _project(key, W_K_i, b_K_i)  # (B, S, d_k)
        V_i = _project(value, W_V_i, b_V_i)  # (B, S, d_k)
        mask_i = None if mask is None else mask[:, min(i, mask.shape[1] - 1)]
        head_i, A_i = scaled_dot_product_attention(Q_i, K_i, V_i, mask_i,
                                                   allow_nonfinite)
        heads.append(head_i)  # (B, L, d_k)
        weights.append(A_i)  # (B, L, S)
    concat = torch.cat(heads, dim=-1)  # (B, L, h*d_k) = (B, L, d_model)
    out = output_projection(concat, w.W_O, w.b_O)  # (B, L, d_model)
    return out, torch.stack(weights, dim=1)  # (B, h, L, S)


@_unbatched
def multi_head_attention(
    query, key, value, w: MHAWeights, h: int, *,
    attn_mask=None, key_padding_mask=None, return_concat: bool = False,
    allow_nonfinite: bool = False,
):
    """The batched form: one projection for all heads, reshape, transpose.

    Same numbers as :func:`multi_head_attention_loop`.
    Shapes: ``query`` (B, L, d_model), ``key``/``value`` (B, S, d_model).
    Returns ``(output (B, L, d_model), weights (B, h, L, S))``; with
    ``return_concat=True`` returns ``(output, weights, concat (B, L, d_model))``.
    Bad input raises :class:`~mhacourse.InputError`; NaN/inf inputs too,
    unless ``allow_nonfinite=True``.
    """
    _check_inputs(query, key, value, w, h, allow_nonfinite)
    B, L, _ = query.shape
    S = key.shape[1]
    mask = combine_masks(attn_mask, key_padding_mask, B, h, L, S)
    out, weights, concat = _mha_core(query, key, value, w, h, mask)
    if return_concat:
        return out, weights, concat
    return out, weights


def _mha_core(query, key, value, w: MHAWeights, h, mask=None, *,
             h_kv=None, cache=None, head_mask=None, rotate=None, head_values=None):
    """Multi-head attention, the formula chapters 3 to 6 derive, with no
    input checks (:func:`multi_head_attention` checks, then calls this)::

        head_i = Attention(X W_Q^i, X W_K^(i//g), X W_V^(i//g)),  g = h / h_kv
        out    = Concat(head_1, ..., head_h) W_O + b_O

    Every form of the layer calls it but the loop (the teaching form) and
    the fused fast path, which the tests compare with it. Optional: ``h_kv`` key/value heads
    (chapter 12; ``None``: ``h_kv = h``), a :class:`~mhacourse.KVCache`
    ``cache`` the new keys and values join (chapter 16), ``rotate`` applied to
    the split queries and keys (chapter 14's rotary positions), ``head_mask``
    (h,) or (B, h) scaling each head before ``W_O`` (chapter 4; ``concat``
    stays unscaled), and ``head_values`` (B or 1, h, L, d_k) put where the
    mask removes a head: ``head_i m_i + value_i (1 - m_i)`` (mean, resample
    ablation and activation patching, :mod:`mhacourse.interventions`).
    ``mask``: (B or 1, h or 1, L, S) or (L, S), as :func:`combine_masks`
    returns. ``h`` may be a symbolic size. Returns ``(output (B, L, d_model),
    weights (B, h, L, S), concat (B, L, d_model))``.
    """
    Q = _split_heads_core(_project(query, w.W_Q, w.b_Q), h)  # (B, h, L, d_k)
    kv_heads = h if h_kv is None else h_kv
    K = _split_heads_core(_project(key, w.W_K, w.b_K), kv_heads)  # (B, h_kv, S, d_k)
    V = _split_heads_core(_project(value, w.W_V, w.b_V), kv_heads)  # (B, h_kv, S, d_k)
    if rotate is not None:  # positions rotate queries and keys, never values
        Q, K = rotate(Q), rotate(K)  # (B, h, L, d_k), (B, h_kv, S, d_k)
    if cache is not None:  # keys and values of every token so far
        K, V = cache.append(K, V)  # (B, h_kv, S_cached + S, d_k)
    if h_kv is not None:  # query head i reads key/value head i // g
        K, V = _share_kv_heads(K, h), _share_kv_heads(V, h)  # (B, h, S, d_k)
    heads, weights = _attention_core(Q, K, V, mask)  # (B, h, L, d_k), (B, h, L, S)
    concat = _merge_heads_core(heads)  # (B, L, d_model)
    if head_mask is None:
        return _output_projection_core(concat, w.W_O, w.b_O), weights, concat
    m = head_mask.to(heads.dtype)[..., None, None]  # (h, 1, 1) or (B, h, 1, 1)
    kept = heads * m if head_values is None else heads * m + head_values * (1 - m)
    out = _output_projection_core(_merge_heads_core(kept), w.W_O, w.b_O)  # (B, L, d_model)
    return out, weights, concat


def _linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None = None):
    """``x W + b`` as one BLAS call: ``torch.addmm`` adds the bias inside the
    matrix multiply, so no second (..., d_out) tensor is allocated for ``+ b``.
    Same numbers as :func:`_project` (to float rounding).
    Shapes: (..., d_in) @ (d_in, d_out) -> (..., d_out)."""
    # (N, d_in) with N = B*L; a view (no copy) when x is contiguous
    x2 = x.reshape(-1, x.shape[-1])
    y = x2 @ W if b is None else torch.addmm(b, x2, W)  # (N, d_out)
    return y.view(*x.shape[:-1], W.shape[1])  # (..., d_out)


@_unbatched
def multi_head_attention_fast(
    query, key, value, w: MHAWeights, h: int, *,
    attn_mask=None, key_padding_mask=None, allow_nonfinite: bool = False,
):
    """The batched form with PyTorch's fused kernel for the attention step.

    Same numbers as :func:`multi_head_attention` (to float rounding), but the
    (B, h, L, S) weights are never materialised, so none are returned.
    Returns ``(output (B, L, d_model), None)``.

    What makes it fast (measured in ``benchmarks/bench_mha.py``): the fused
    ``F.scaled_dot_product_attention`` kernel, biases added inside the GEMMs
    (:func:`_linear`), and no copies: the heads are views of the projections,
    and ``merge_heads`` is a view of the kernel's output. One packed Q|K|V
    GEMM for self-attention was tried and was no faster on CPU (it needs the
    three weights concatenated on every call), so Q, K, V stay separate.
    """
    _check_inputs(query, key, value, w, h, allow_nonfinite)
    B, L, _ = query.shape
    S = key.shape[1]
    mask = combine_masks(attn_mask, key_padding_mask, B, h, L, S)  # or None
    # each projection is one GEMM with the bias inside (_linear)
    Q = _split_heads_core(_linear(query, w.W_Q, w.b_Q), h)  # (B, h, L, d_k), a view
    K = _split_heads_core(_linear(key, w.W_K, w.b_K), h)  # (B, h, S, d_k), a view
    V = _split_heads_core(_linear(value, w.W_V, w.b_V), h)  # (B, h, S, d_k), a view
    sdpa_mask = None if mask is None else to_sdpa_mask(mask)
    if sdpa_mask is not None and sdpa_mask.is_floating_point():
        sdpa_mask = sdpa_mask.to(Q.dtype)  # the fused kernel wants one dtype
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=sdpa_mask)
    # heads: (B, h, L, d_k); the CPU kernel stores it as (B, L, h, d_k), like
    # Q, so _merge_heads_core is a view, not a copy
    return _linear(_merge_heads_core(heads), w.W_O, w.b_O), None  # (B, L, d_model)


def check_torch_mha(mha) -> None:
    if not isinstance(mha, nn.MultiheadAttention):
        raise InputTypeError(f"mha must be an nn.MultiheadAttention; got {describe(mha)}.")
    if not mha._qkv_same_embed_dim:
        raise InputError("only key/value of the same width as the query (kdim = vdim = "
                         "embed_dim) are supported.")


def from_torch(mha: nn.MultiheadAttention) -> MHAWeights:
    """Read an ``nn.MultiheadAttention``'s weights into the course's names."""
    check_torch_mha(mha)
    d = mha.embed_dim
    Wi = mha.in_proj_weight.detach()  # (3d, d), used as x @ Wi.T
    bi = None if mha.in_proj_bias is None else mha.in_proj_bias.detach()
    bo = None if mha.out_proj.bias is None else mha.out_proj.bias.detach()
    b_Q, b_K, b_V = (None, None, None) if bi is None else bi.split(d)  # (d,) each
    return MHAWeights(W_Q=Wi[:d].T, W_K=Wi[d:2 * d].T, W_V=Wi[2 * d:].T,
                      W_O=mha.out_proj.weight.detach().T, b_Q=b_Q, b_K=b_K, b_V=b_V,
                      b_O=bo)


def to_torch(w: MHAWeights, h: int) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention(batch_first=True)`` holding these weights."""
    check_weights(w, h)
    bias = w.b_Q is not None
    mha = nn.MultiheadAttention(w.d_model, h, bias=bias, batch_first=True,
                                dtype=w.W_Q.dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w.W_Q.T, w.W_K.T, w.W_V.T]))
        mha.out_proj.weight.copy_(w.W_O.T)
        if bias:
            mha.in_proj_bias.copy_(torch.cat([w.b_Q, w.b_K, w.b_V]))
            mha.out_proj.bias.copy_(w.b_O)
    return mha
