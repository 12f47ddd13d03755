"""Interventions on heads: three ablations and activation patching (page
11c, a section of chapter 11).

* **Ablation** asks what breaks when a head's output is taken away:
  replaced by zero, by its mean over a reference batch (per position), or by
  its output on another input (resample).
* **Activation patching** asks how much of the *difference* between a clean
  and a corrupted input flows through a head: run one input with the head's
  output from the other run put in (Meng et al. 2022; Heimersheim & Nanda
  2024; Zhang & Nanda 2024). "denoise" runs the corrupted input with clean
  outputs put in; "noise" runs the clean input with corrupted ones.

The metric is the logit difference between the right answer and a named
rival at one scored position per pair (:func:`logit_diff`), and the fraction
of the clean-minus-corrupted difference a run keeps
(:func:`fraction_recovered`: 1 = the clean run's, 0 = the corrupted run's).

**The model protocol.** These functions use only ``model.cfg.n_layers``,
``model.cfg.h`` and ``model.forward_heads(ids, head_mask=None,
head_values=None) -> (logits (B, L, V), heads (n_layers, B, h, L, d_k))``:
``heads`` are each head's own output before ``W_O``; where ``head_mask``
(n_layers, h) or (n_layers, B, h) is 0 a head writes ``head_values``
(n_layers, B or 1, h, L, d_k) instead (zero without them). The tiny model
(:meth:`~mhacourse.tiny_model.TinyTransformer.forward_heads`) and the
course's real causal LM offer it. Heads are ``(layer, head)`` pairs counted
from 0 (:func:`mhacourse.head_name` names ``(0, 0)`` "L1H1").

The corrupted inputs are defined, not improvised: :data:`CORRUPTIONS` says
what each changes and keeps; :func:`corrupt` builds its pairs from
:func:`mhacourse.tasks.sample` with a seed.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from . import tasks
from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_finite,
    check_id_tensor,
    check_positive_int,
    check_real,
    check_seed,
    check_tensor,
    describe,
)

#: How an ablated head's output is replaced.
METHODS = ("zero", "mean", "resample")
#: Which run receives the other run's head outputs.
DIRECTIONS = ("denoise", "noise")
#: What :func:`ablation_map` and :func:`patching_map` intervene on at once.
UNITS = ("head", "layer")
#: Smallest |clean - corrupted| logit difference :func:`fraction_recovered`
#: divides by: under a thousandth of a logit the ratio is rounding noise.
MIN_GAP = 1e-3
MAX_PAIRS = 10_000  # pairs :func:`corrupt` builds at most (a second on a CPU)


class Pairs(NamedTuple):
    """Clean and corrupted sequences and what to score, from :func:`corrupt`."""

    clean: torch.Tensor  # (N, L) word ids
    corrupted: torch.Tensor  # (N, L): the clean ids, one or two words changed
    answer: torch.Tensor  # (N,) the clean sequence's target at the position
    rival: torch.Tensor  # (N,) the corrupted sequence's target there
    positions: torch.Tensor  # (N,) the scored position of each pair


# --- input checks: the rules of this module's public functions -------------

def check_model(model, probe: bool = False) -> tuple[int, int]:
    """``(n_layers, h)`` of a model that offers the protocol, else raise.
    ``probe``: also run it on one token, so that its own checks refuse a
    config that disagrees with its weights (every other function here runs
    the model, and so its checks, anyway)."""
    cfg = getattr(model, "cfg", None)
    if not callable(getattr(model, "forward_heads", None)) or cfg is None:
        raise InputTypeError(
            "model must offer cfg.n_layers, cfg.h and forward_heads(ids, head_mask, "
            f"head_values) (a tiny_model.TinyTransformer); got {describe(model)}.")
    sizes = (check_positive_int("model.cfg.n_layers", getattr(cfg, "n_layers", None)),
             check_positive_int("model.cfg.h", getattr(cfg, "h", None)))
    if probe:
        _run(model, torch.zeros(1, 1, dtype=torch.long))
    return sizes


def check_ids(name: str, ids, model) -> torch.Tensor:
    vocab = getattr(model.cfg, "vocab_size", 2**62)
    return check_id_tensor(name, ids, vocab, what="word ids")


def check_head_list(model, heads) -> list[tuple[int, int]]:
    """``heads`` as sorted distinct ``(layer, head)`` pairs of the model."""
    n_layers, h = check_model(model)
    if isinstance(heads, (str, bytes, torch.Tensor)) or not isinstance(
            heads, (list, tuple, set)) or not heads:
        raise InputTypeError(f"heads must be a non-empty list of (layer, head) "
                             f"pairs counted from 0, e.g. [(0, 1)]; got "
                             f"{describe(heads)}.")
    out = set()
    for k, pair in enumerate(heads):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise InputTypeError(f"heads[{k}] must be a (layer, head) pair; got "
                                 f"{describe(pair)}.")
        l = as_int(f"heads[{k}] layer", pair[0], "a layer index (a whole number)")
        i = as_int(f"heads[{k}] head", pair[1], "a head index (a whole number)")
        if not (0 <= l < n_layers and 0 <= i < h):
            raise InputError(f"heads[{k}] = ({l}, {i}) is not a head of this model: "
                             f"layers count 0..{n_layers - 1} and heads 0..{h - 1} "
                             f"(n_layers = {n_layers}, h = {h}).")
        out.add((l, i))
    return sorted(out)


def check_choice(name: str, value, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(map(repr, allowed))}; "
                         f"got {describe(value)}.")
    return value


def check_ablate(model, ids, heads, method, reference):
    heads = check_head_list(model, heads)
    ids = check_ids("ids", ids, model)
    check_choice("method", method, METHODS)
    if reference is None:
        if method == "resample" and ids.shape[0] < 2:
            raise InputError("resample ablation needs another input: give "
                             "reference (B, L) ids or at least 2 sequences in ids.")
        return heads
    check_ids("reference", reference, model)
    if method == "zero":
        raise InputError("zero ablation reads no reference: pass reference=None.")
    want = ids.shape if method == "resample" else (reference.shape[0], ids.shape[1])
    if reference.shape != want:
        raise InputError(f"reference must have shape {tuple(want)} for {method} "
                         f"ablation (ids are {tuple(ids.shape)}); got "
                         f"{tuple(reference.shape)}.")
    return heads


def check_patch(model, clean_ids, corrupted_ids, heads, direction):
    heads = check_head_list(model, heads)
    check_ids("clean_ids", clean_ids, model)
    check_ids("corrupted_ids", corrupted_ids, model)
    if clean_ids.shape != corrupted_ids.shape:
        raise InputError(f"clean_ids and corrupted_ids must have one shape (B, L); "
                         f"got {tuple(clean_ids.shape)} and "
                         f"{tuple(corrupted_ids.shape)}.")
    check_choice("direction", direction, DIRECTIONS)
    return heads


def check_scored(answer, rival, positions, N: int, L: int, V: int) -> None:
    """One answer, rival and scored position per sequence, never answer ==
    rival (the metric would be 0 by definition)."""
    for name, t, n in (("answer", answer, V), ("rival", rival, V),
                       ("positions", positions, L)):
        check_id_tensor(name, t, n, ndim=1, legend="(N,)",
                        what="word ids" if name != "positions" else "positions")
        if t.shape[0] != N:
            raise InputError(f"{name} must have one entry per sequence, (N,) = "
                             f"({N},); got shape {tuple(t.shape)}.")
    same = (answer == rival).nonzero()
    if len(same):
        raise InputError(f"answer equals rival for {len(same)} pair(s) (first: "
                         f"{int(same[0, 0])}): the corruption leaves their answer "
                         "unchanged, so their logit difference is 0 by definition; "
                         "drop them.")


def check_logit_diff(logits, answer, rival, positions) -> None:
    check_tensor("logits", logits, ndim=3, legend="(N, L, V)")
    if 0 in logits.shape:
        raise InputError(f"logits must have shape (N, L, V), every axis >= 1; got "
                         f"{tuple(logits.shape)}.")
    check_finite("logits", logits, option=False)
    check_scored(answer, rival, positions, *logits.shape)


def check_fraction(patched, clean, corrupted) -> None:
    if isinstance(patched, torch.Tensor):
        check_tensor("patched", patched)
        check_finite("patched", patched, option=False)
    else:
        check_real("patched", patched)
    clean = check_real("clean", clean)
    corrupted = check_real("corrupted", corrupted)
    check_gap(clean, corrupted)


def check_gap(clean: float, corrupted: float) -> None:
    if abs(clean - corrupted) < MIN_GAP:
        raise InputError(
            f"the clean and corrupted metrics are {clean:.4g} and {corrupted:.4g}: "
            f"a difference under {MIN_GAP:g} leaves nothing to recover (the "
            "corruption barely changes the answer, or the model is untrained).")


def check_pairs(model, pairs) -> Pairs:
    if not isinstance(pairs, tuple) or len(pairs) != 5:
        raise InputTypeError("pairs must be (clean, corrupted, answer, rival, "
                             f"positions) from interventions.corrupt; got "
                             f"{describe(pairs)}.")
    clean, corrupted, answer, rival, positions = pairs
    check_patch(model, clean, corrupted, [(0, 0)], "denoise")
    check_scored(answer, rival, positions, *clean.shape,
                 getattr(model.cfg, "vocab_size", 2**62))
    return Pairs(*pairs)


def check_map(model, pairs, choice, allowed, unit) -> Pairs:
    pairs = check_pairs(model, pairs)
    check_choice("method" if allowed is METHODS else "direction", choice, allowed)
    check_choice("unit", unit, UNITS)
    return pairs


def check_corrupt(name, n, seed, cfg) -> None:
    check_choice("name", name, tuple(CORRUPTIONS))
    check_positive_int("n", n, MAX_PAIRS, "pairs built in about a second")
    check_seed("seed", seed)
    if not isinstance(cfg, tasks.TaskConfig):
        raise InputTypeError(f"cfg must be a tasks.TaskConfig; got {describe(cfg)}.")


# --- the interventions ---------------------------------------------------------

def _run(model, ids, head_mask=None, head_values=None):
    """``model.forward_heads`` without gradients: (B, L, V), (n_layers, B, h, L, d_k)."""
    with torch.no_grad():
        return model.forward_heads(ids, head_mask=head_mask, head_values=head_values)


def _removed(model, heads) -> torch.Tensor:
    """(n_layers, h): 0 at the chosen ``(layer, head)`` pairs, 1 elsewhere."""
    mask = torch.ones(model.cfg.n_layers, model.cfg.h)
    for l, i in heads:
        mask[l, i] = 0.0
    return mask


def replacement(model, ids, method, reference=None):
    """What an ablated head writes instead of its output, for every head:

    * ``"zero"``: ``None`` (the mask alone writes 0);
    * ``"mean"``: ``mean_b head(reference_b)`` per position, (n_layers, 1,
      h, L, d_k); ``reference`` defaults to ``ids``;
    * ``"resample"``: ``head(reference_b)`` for row ``b``, (n_layers, B, h,
      L, d_k); ``reference`` defaults to ``ids`` rolled by one row, so each
      sequence gets another sequence's head outputs.
    """
    check_ablate(model, ids, [(0, 0)], method, reference)
    if method == "zero":
        return None
    _, heads = _run(model, ids if reference is None else reference)
    if method == "mean":
        return heads.mean(dim=1, keepdim=True)  # (n_layers, 1, h, L, d_k)
    # (n_layers, B, h, L, d_k): row b gets row b - 1's outputs
    return heads.roll(1, dims=1) if reference is None else heads


def ablate(model, ids, heads, method, reference=None) -> torch.Tensor:
    """Logits (B, L, V) of ``ids`` (B, L) with each ``(layer, head)`` of
    ``heads`` replaced by ``method`` (:func:`replacement`): the head writes
    ``value`` instead of ``head(ids)``, before ``W_O``; every other head,
    including those above it, runs on what the replacement gives them."""
    heads = check_ablate(model, ids, heads, method, reference)
    values = replacement(model, ids, method, reference)
    return _run(model, ids, _removed(model, heads), values)[0]


def patch_heads(model, clean_ids, corrupted_ids, heads, direction) -> torch.Tensor:
    """Activation patching of ``heads``: logits (B, L, V).

    * ``"denoise"``: run ``corrupted_ids``, each patched head writing its
      output on ``clean_ids`` (same row);
    * ``"noise"``: run ``clean_ids``, each patched head writing its output
      on ``corrupted_ids``.

    ``clean_ids``, ``corrupted_ids`` (B, L). Patching every head of every
    layer gives the source run's logits exactly at each position whose token
    the corruption left unchanged (embeddings and feed-forwards act per
    position); at a changed position the token itself still differs.
    """
    heads = check_patch(model, clean_ids, corrupted_ids, heads, direction)
    source, target = ((clean_ids, corrupted_ids) if direction == "denoise"
                      else (corrupted_ids, clean_ids))
    _, values = _run(model, source)  # (n_layers, B, h, L, d_k)
    return _run(model, target, _removed(model, heads), values)[0]


def logit_diff(logits, answer, rival, positions) -> float:
    """``mean_n [logits[n, t_n, answer_n] - logits[n, t_n, rival_n]]``, the
    logit difference at each pair's scored position ``t_n``, averaged.

    Shapes: ``logits`` (N, L, V), ``answer``, ``rival``, ``positions`` (N,).
    """
    check_logit_diff(logits, answer, rival, positions)
    return float(_logit_diff_core(logits, answer, rival, positions).mean())


def _logit_diff_core(logits, answer, rival, positions) -> torch.Tensor:
    """Each pair's logit difference at its scored position, (N,) (no
    checks; :func:`logit_diff` averages it)."""
    rows = torch.arange(logits.shape[0])  # (N,)
    at = logits[rows, positions]  # (N, V): each pair's scored position
    return at[rows, answer] - at[rows, rival]


def fraction_recovered(patched, clean, corrupted):
    """``(patched - corrupted) / (clean - corrupted)``: 1 where a run's
    metric is the clean run's, 0 where it is the corrupted run's (it may
    leave [0, 1]: a patch can overshoot). ``patched``: a number or a tensor
    of them; ``clean``, ``corrupted``: numbers at least :data:`MIN_GAP`
    apart, else refused (a near-zero denominator gives noise, not a ratio).
    """
    check_fraction(patched, clean, corrupted)
    return _fraction_core(patched, clean, corrupted)


def _fraction_core(patched, clean, corrupted):
    """``(patched - corrupted) / (clean - corrupted)``, no checks."""
    return (patched - corrupted) / (clean - corrupted)


def all_heads(model) -> list[tuple[int, int]]:
    """Every ``(layer, head)`` of the model, layer by layer."""
    n_layers, h = check_model(model, probe=True)
    return [(l, i) for l in range(n_layers) for i in range(h)]


def _map(model, pairs: Pairs, target, values, unit) -> torch.Tensor:
    """The fraction recovered when ``target`` runs with one head (``unit=
    "head"``: (n_layers, h)) or one layer's heads (``"layer"``: (n_layers,))
    writing ``values`` instead of its output. The endpoints' gap is checked
    before the groups run (:func:`_map_core`, all at once)."""
    score = pairs[2:]  # answer, rival, positions
    clean = logit_diff(_run(model, pairs.clean)[0], *score)
    corrupted = logit_diff(_run(model, pairs.corrupted)[0], *score)
    check_gap(clean, corrupted)
    n_layers, h = model.cfg.n_layers, model.cfg.h
    out = _map_core(lambda *a: _run(model, *a), target, values, score,
                   _groups_core(n_layers, h, unit))
    shape = (n_layers, h) if unit == "head" else (n_layers,)
    return fraction_recovered(out, clean, corrupted).reshape(shape)


def _groups_core(n_layers: int, h, unit: str) -> torch.Tensor:
    """The masks of :func:`patching_map`'s groups, (G, n_layers, h): one
    head per group (``"head"``, G = n_layers h, layer by layer) or one
    layer's heads (``"layer"``, G = n_layers); 0 = replaced. ``h`` may be a
    symbolic size (the page's graph)."""
    if unit == "head":
        return 1 - torch.eye(n_layers * h).reshape(n_layers * h, n_layers, h)
    return 1 - torch.eye(n_layers)[:, :, None].expand(n_layers, n_layers, h)


def _map_core(run, target, values, score, masks) -> torch.Tensor:
    """The mean logit difference of ``target`` (N, L) run once per group of
    ``masks`` (G, n_layers, h), each group's heads writing ``values``
    (n_layers, N or 1, h, L, d_k; None: zero), all groups as one batch of
    G N sequences: (G,). ``run(ids, head_mask, head_values)`` is the
    model's ``forward_heads``; ``score`` = (answer, rival, positions). No
    checks (the page's patch graph traces it)."""
    G, n_layers, h = masks.shape
    N, L = target.shape
    ids = target[None].expand(G, N, L).reshape(G * N, L)  # (G N, L)
    mask = masks.transpose(0, 1)[:, :, None, :]  # (n_layers, G, 1, h)
    mask = mask.expand(n_layers, G, N, h).reshape(n_layers, G * N, h)
    if values is not None and values.shape[1] != 1:  # one row per sequence
        n, _, _, L_, d_k = values.shape
        values = values[:, None].expand(n, G, N, h, L_, d_k).reshape(
            n, G * N, h, L_, d_k)  # (n_layers, G N, h, L, d_k)
    logits = run(ids, mask, values)[0]  # (G N, L, V)
    answer, rival, positions = (t[None].expand(G, N).reshape(G * N) for t in score)
    return _logit_diff_core(logits, answer, rival, positions).reshape(G, N).mean(dim=1)


def _maps_core(run, clean, corrupted, answer, rival, positions, n_layers: int, h):
    """Everything the page's Patch view draws, from one corruption's pairs:
    ``ends`` (2,), the clean and corrupted runs' mean logit difference, and
    ``fractions`` (5, n_layers, h), the fraction recovered of each head
    patched by :data:`DIRECTIONS` then ablated by :data:`METHODS` (on the
    clean sequences, the default references): :func:`patching_map` and
    :func:`ablation_map` with ``unit="head"``. No checks (the page's graphs
    run its two halves, :func:`_patch_maps_core` then
    :func:`_ablation_maps_core`); the caller refuses ends closer than
    :data:`MIN_GAP`."""
    ends, patched = _patch_maps_core(run, clean, corrupted, answer, rival, positions,
                                    n_layers, h)
    _, ablated = _ablation_maps_core(run, clean, corrupted, answer, rival, positions,
                                    n_layers, h)
    return ends, torch.cat([patched, ablated])


def _ends(run, clean, corrupted, score):
    """The clean and corrupted runs: ``(ends (2,), clean's heads, corrupted's
    heads)``, heads (n_layers, N, h, L, d_k)."""
    logits, on_clean = run(clean, None, None)  # (N, L, V), (n_layers, N, h, L, d_k)
    bad_logits, on_bad = run(corrupted, None, None)
    ends = torch.stack([_logit_diff_core(logits, *score).mean(),
                        _logit_diff_core(bad_logits, *score).mean()])  # (2,)
    return ends, on_clean, on_bad


def _maps(run, jobs, score, ends, n_layers: int, h):
    """Each job's (target, values) map of every head, as fractions
    recovered: (len(jobs), n_layers, h)."""
    masks = _groups_core(n_layers, h, "head")  # (n_layers h, n_layers, h)
    out = torch.stack([_map_core(run, target, values, score, masks)
                       for target, values in jobs])  # (J, n_layers h)
    return _fraction_core(out, ends[0], ends[1]).reshape(len(jobs), n_layers, h)


def _patch_maps_core(run, clean, corrupted, answer, rival, positions, n_layers: int,
                    h):
    """:func:`_maps_core`'s first half, the page's ``patch`` graph: ``(ends
    (2,), fractions (2, n_layers, h))``, each head patched by
    :data:`DIRECTIONS` (:func:`patching_map`, ``unit="head"``). No checks."""
    score = (answer, rival, positions)
    ends, on_clean, on_bad = _ends(run, clean, corrupted, score)
    jobs = ((corrupted, on_clean), (clean, on_bad))  # denoise, noise
    return ends, _maps(run, jobs, score, ends, n_layers, h)


def _ablation_maps_core(run, clean, corrupted, answer, rival, positions,
                       n_layers: int, h):
    """:func:`_maps_core`'s second half, the page's ``ablate`` graph: ``(ends
    (2,), fractions (3, n_layers, h))``, each head ablated by
    :data:`METHODS` on the clean sequences (:func:`ablation_map`,
    ``unit="head"``, the default references). No checks."""
    score = (answer, rival, positions)
    ends, on_clean, _ = _ends(run, clean, corrupted, score)
    jobs = ((clean, None), (clean, on_clean.mean(dim=1, keepdim=True)),  # zero, mean
            (clean, on_clean.roll(1, dims=1)))  # resample: row b gets row b - 1's
    return ends, _maps(run, jobs, score, ends, n_layers, h)


def patching_map(model, pairs, direction, unit="head") -> torch.Tensor:
    """The fraction recovered when one head (``unit="head"``: (n_layers, h))
    or one layer's heads (``"layer"``: (n_layers,)) is patched in
    ``direction``, on ``pairs`` (:func:`corrupt`'s)::

        map[l, i] = (LD(patch (l, i)) - LD(corrupted)) / (LD(clean) - LD(corrupted))

    ``LD`` is :func:`logit_diff`. Denoising: near 1, the head alone carries
    what the corruption changed; noising: below 1, the run needs the head.
    """
    pairs = check_map(model, pairs, direction, DIRECTIONS, unit)
    source, target = ((pairs.clean, pairs.corrupted) if direction == "denoise"
                      else (pairs.corrupted, pairs.clean))
    _, values = _run(model, source)  # (n_layers, N, h, L, d_k)
    return _map(model, pairs, target, values, unit)


def ablation_map(model, pairs, method, reference=None, unit="head") -> torch.Tensor:
    """The fraction recovered when one head (``unit="head"``: (n_layers, h))
    or one layer's heads (``"layer"``: (n_layers,)) is ablated by ``method``
    on ``pairs.clean``: :func:`patching_map`'s scale, 1 = the ablation
    changes nothing, 0 = as bad as the corruption (below 0: worse).
    ``reference`` as :func:`ablate`'s (default: ``pairs.clean``)."""
    pairs = check_map(model, pairs, method, METHODS, unit)
    check_ablate(model, pairs.clean, [(0, 0)], method, reference)
    values = replacement(model, pairs.clean, method, reference)
    return _map(model, pairs, pairs.clean, values, unit)


# --- corrupted inputs, defined ------------------------------------------------------

def _last_before(x: list[int], t: int) -> int:
    """The most recent ``j < t`` with ``x[j] == x[t]``, or -1."""
    return max((j for j in range(t) if x[j] == x[t]), default=-1)


def _successor(x, t, fresh, draw):
    j = _last_before(x, t)
    return x[:j + 1] + [fresh] + x[j + 2:]  # x_{j+1} -> fresh


def _occurrence(x, t, fresh, draw):
    j = _last_before(x, t)
    if x[:j].count(x[t]):  # an older occurrence would take over the lookup
        return None
    return x[:j] + [fresh] + x[j + 1:]  # x_j -> fresh


def _query(x, t, fresh, draw):
    # another word seen before t whose last occurrence k has k + 1 < t
    seen = [w for w in dict.fromkeys(x[:t]) if w != x[t] and
            max(k for k in range(t) if x[k] == w) + 1 < t]
    return None if not seen else x[:t] + [seen[draw(len(seen))]] + x[t + 1:]


#: name -> (edit, what it changes and what it keeps). An edit takes a clean
#: sequence (a list of ids), a lookup position t, a fresh word (absent from
#: the sequence) and ``draw(k)``, a random index 0..k-1; it returns the
#: corrupted list, or None where the corruption does not apply.
CORRUPTIONS = {
    "successor": (_successor, "replaces the word after the query's earlier "
                  "occurrence with a word absent from the sequence, so the "
                  "lookup's answer becomes that word; keeps the query, its "
                  "earlier occurrence and every other token"),
    "occurrence": (_occurrence, "replaces the query's only earlier occurrence "
                   "with a word absent from the sequence, so there is nothing "
                   "to look up and the answer becomes the previous word; keeps "
                   "the query, the old answer's token and every other token"),
    "query": (_query, "replaces the query token itself with another word seen "
              "earlier, so the lookup goes to that word's successor; keeps "
              "every earlier token, but changes the scored position's own "
              "token, which patching heads cannot restore"),
}


def corrupt(name, n, seed=0, cfg=tasks.TaskConfig()) -> Pairs:
    """``n`` clean/corrupted pairs for the corruption ``name``
    (:data:`CORRUPTIONS`), from :func:`mhacourse.tasks.sample` with ``seed``.

    Each pair scores one lookup position ``t`` of its clean sequence, drawn
    at random among those the corruption applies to; ``answer`` is the clean
    target there and ``rival`` the corrupted sequence's, by the task's own
    rule (:func:`~mhacourse.tasks.targets`), and never equal. Shapes:
    ``clean``, ``corrupted`` (n, L); ``answer``, ``rival``, ``positions`` (n,).
    """
    check_corrupt(name, n, seed, cfg)
    edit = CORRUPTIONS[name][0]
    g = torch.Generator().manual_seed(seed)

    def draw(k):
        return int(torch.randint(k, (), generator=g))

    rows = []
    for _ in range(20):  # each round keeps most sequences: 20 is plenty
        x, y, kind = tasks.sample(2 * n, cfg, generator=g)  # (2n, L) each
        for b in range(x.shape[0]):
            seq = x[b].tolist()
            ts = (kind[b] == tasks.LOOKUP).nonzero()[:, 0].tolist()
            if not ts:
                continue
            t = ts[draw(len(ts))]
            unused = [w for w in range(1, cfg.vocab_size) if w not in seq]
            bad = edit(seq, t, unused[draw(len(unused))], draw) if unused else None
            if bad is None:
                continue
            rival = int(tasks.targets(torch.tensor([bad]))[0][0, t])
            if rival != int(y[b, t]):
                rows.append((seq, bad, int(y[b, t]), rival, t))
            if len(rows) == n:
                clean, bad, answer, rival, pos = zip(*rows, strict=True)
                return Pairs(*(torch.tensor(v) for v in (clean, bad, answer,
                                                         rival, pos)))
    raise InputError(f"corruption {name!r} applied to {len(rows)} of the sequences "
                     f"drawn, not {n}: these task settings ({cfg}) leave it too "
                     "few lookups.")
