"""A synthetic sequence task whose solution needs several kinds of relation.

The tiny models of :mod:`mhacourse.tiny_model` are trained on it, so that
their heads learn something a reader can see in a heatmap.

The task: *lookup, else previous word*
---------------------------------------
A sequence is ``L`` word ids ``x_0 .. x_{L-1}``. The target ``y_t`` at
position ``t`` is

* **lookup** (``x_t`` occurred before): let ``j`` be the **most recent**
  earlier position with ``x_j == x_t`` (``j < t``); then ``y_t = x_{j+1}``,
  "the word that followed ``x_t`` last time". ``j + 1 <= t``, so the answer is
  always in the visible prefix. (For a doubled word, ``j == t - 1`` and
  ``y_t = x_t``; :func:`sample` never doubles a word, so there
  ``j + 1 <= t - 1``.)
* **previous** (first occurrence of ``x_t``, ``t >= 1``): ``y_t = x_{t-1}``.
* position 0 has no earlier word and is **not scored** (``kind = 0``).

Every position ``t >= 1`` is scored, with the part it belongs to recorded in
``kind`` (:data:`PREVIOUS` or :data:`LOOKUP`). Example::

    x:     the  cat  sat  the  mat  cat  the
    y:     -    the  cat  cat  the  sat  mat
    kind:  -    prev prev look prev look look

A causal model solves it with three relations, the ones interpretability
papers find in real language models (Olsson et al. 2022, "In-context Learning
and Induction Heads"):

1. a **previous-token** head: position ``t`` attends to ``t - 1``;
2. a **duplicate-token** check: has ``x_t`` occurred before? (decides the part);
3. an **induction** head (layer 2): position ``t`` attends to ``j + 1``, the
   position whose *previous* word equals ``x_t``; it can only find it after a
   previous-token head of layer 1 has copied ``x_j`` into position ``j + 1``.

Sequences (:func:`sample`) are drawn so both parts are common: each sequence
first draws an alphabet of ``n`` distinct words (``n`` uniform in
``[n_min, n_max]``) from the whole vocabulary; its first word is uniform over
the alphabet, and every next word uniform over the alphabet's *other* ``n - 1``
words (never the same word twice in a row). Words repeat with different
successors, so "most recent" matters. With the defaults (``L = 16``,
``n`` in 6..16) about 48 % of the positions are "previous" and 46 % lookups.

Chance: guessing uniformly over the vocabulary scores ``1 / len(VOCAB)``
(0.35 %). :func:`baselines` computes stronger rules that use the context but
do no lookup; on the held-out set of :mod:`mhacourse.tiny_model`:
"always the previous word" scores 100 % on the previous part, 29 % on lookups
(patterns such as ``b a b``, where the answer is the previous word) and 65 %
overall; "a uniformly random distinct word of the prefix" scores 23 % / 17 % /
20 %. A model has learned the lookup only if it beats 29 % on lookups.
"""
from __future__ import annotations

import numbers
import re
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_generator,
    check_id_tensor,
    check_positive_int,
    check_seed,
    check_size,
    check_text,
    describe,
)

# --- input checks: the rules of this module's public functions -----------

def check_word_list(name: str, words) -> None:
    if isinstance(words, (str, bytes)) or not isinstance(words, (list, tuple)):
        raise InputTypeError(f"{name} must be a str or a list of word strings; got "
                             f"{describe(words)}.")
    bad = [(i, w) for i, w in enumerate(words) if not isinstance(w, str)]
    if bad:
        i, w = bad[0]
        fix = (" For word ids use tasks.decode(ids)." if isinstance(
            w, (numbers.Integral, torch.Tensor)) else "")
        raise InputTypeError(f"{name} must hold strings (words); {name}[{i}] is "
                             f"{describe(w)}.{fix}")


def check_text_or_tokens(text_or_tokens) -> None:
    if not isinstance(text_or_tokens, str):
        check_word_list("text_or_tokens", text_or_tokens)


def check_decode_ids(ids) -> None:
    n = len(VOCAB)
    if isinstance(ids, (torch.Tensor, np.ndarray)):
        bad_dtype = (ids.dtype == torch.bool or ids.is_floating_point()
                     or ids.is_complex()) if isinstance(ids, torch.Tensor) else \
            ids.dtype.kind not in "iu"
        if bad_dtype:
            raise InputError(f"ids must be whole-number word ids; got "
                             f"{describe(ids)}. Pass ids.long().")
        if ids.ndim != 1:
            raise InputError(f"ids must be one sequence (1-D); got shape "
                             f"{tuple(ids.shape)}. For a batch, decode each row.")
        values = [int(i) for i in ids.tolist()]
    elif isinstance(ids, (list, tuple)):
        values = []
        for i, v in enumerate(ids):
            values.append(as_int(f"ids[{i}]", v, "a whole-number word id"))
    else:
        raise InputTypeError(f"ids must be a list or 1-D tensor of word ids; got "
                             f"{describe(ids)}.")
    bad = [v for v in values if not 0 <= v < n]
    if bad:
        raise InputError(f"ids must be word ids in 0..{n - 1}; got {bad[:3]} "
                         "(negative ids would wrap around).")


def check_task_config(c) -> None:
    check_positive_int("L", c.L, 10**5)
    check_positive_int("n_min", c.n_min)
    if c.n_min < 2:
        raise InputError(f"n_min must be at least 2 (a word never follows itself, so "
                         f"a sequence needs two distinct words); got n_min = {c.n_min}.")
    check_positive_int("n_max", c.n_max)
    check_positive_int("vocab_size", c.vocab_size, 10**6)
    if not c.n_min <= c.n_max <= c.vocab_size:
        raise InputError(
            f"need n_min <= n_max <= vocab_size; got n_min = {c.n_min}, "
            f"n_max = {c.n_max}, vocab_size = {c.vocab_size}.")


def check_targets(x) -> None:
    check_id_tensor("x", x, 2**62, legend="(B, L)", what="word ids")


def check_targets_reference(words) -> None:
    if not isinstance(words, (list, tuple)):
        raise InputTypeError(f"words must be a list (or tuple) of items; got "
                             f"{describe(words)}.")
    try:
        for w in words:
            hash(w)
    except TypeError:
        raise InputTypeError("words must hold hashable items (words, numbers); got "
                             f"{describe(w)}.") from None


def check_sample(n, cfg, seed, generator) -> None:
    check_positive_int("n", n, 10**6)
    if not isinstance(cfg, TaskConfig):
        raise InputTypeError(f"cfg must be a TaskConfig; got {describe(cfg)}.")
    check_size("sample (n x vocab_size)", n * max(cfg.vocab_size, cfg.L))
    if (seed is None) == (generator is None):
        raise InputError("pass exactly one of seed= and generator=; got "
                         + ("both." if seed is not None else "neither."))
    if seed is not None:
        check_seed("seed", seed)
    check_generator("generator", generator)


def check_data(name, data, cfg=None, *, need_parts=False):
    """``(x, y, kind)`` from :func:`tasks.sample` (N, L) each, or raise."""
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise InputTypeError(f"{name} must be (x, y, kind) from tasks.sample(n, "
                             f"seed=...) or tiny_model.heldout(); got "
                             f"{describe(data)}.")
    x, y, kind = data
    vocab = len(VOCAB) if cfg is None else cfg.vocab_size
    check_id_tensor(f"{name}: x", x, vocab, legend="(N, L)", what="word ids")
    if cfg is not None and x.shape[1] > cfg.max_len:
        raise InputError(f"{name}: x has L = {x.shape[1]} positions; the model "
                         f"reads at most max_len = {cfg.max_len}.")
    check_id_tensor(f"{name}: y", y, max(vocab, int(x.max()) + 1), legend="(N, L)",
                    what="word ids")
    check_id_tensor(f"{name}: kind", kind, 3, legend="(N, L)",
                    what="parts (0 not scored, 1 previous, 2 lookup)")
    if not (x.shape == y.shape == kind.shape):
        raise InputError(f"{name}: x, y and kind must have one shape (N, L); got "
                         f"{tuple(x.shape)}, {tuple(y.shape)}, {tuple(kind.shape)}.")
    y_ref, kind_ref = targets(x)
    if not torch.equal(kind, kind_ref) or (y is not x and not torch.equal(
            y[kind != NOT_SCORED], y_ref[kind != NOT_SCORED])):
        raise InputError(f"{name}: y and kind are not the task's targets of x; the "
                         "scores would be silently wrong. Use (x, *targets(x)) "
                         "or tasks.sample(n, seed=...).")
    if need_parts:
        for k in (PREVIOUS, LOOKUP):
            if not bool((kind == k).any()):
                raise InputError(
                    f"{name} has no '{KIND_NAMES[k]}' positions: the "
                    "accuracy on that part would be 0/0 = NaN. Use more "
                    "sequences (tasks.sample) or the held-out set.")
    return x, y, kind


def check_baselines(x, y, kind) -> None:
    check_data("(x, y, kind)", (x, y, kind), need_parts=True)
    if int(y.max()) > int(x.max()):
        raise InputError("y holds a word that is not in x: baselines need the "
                         "targets of targets(x).")


# --- vocabulary --------------------------------------------------------------

UNK = "[UNK]"

#: The course's example sentences, the one list of them: ``head_analysis.SEED_SENTENCES``
#: is this tuple and ``explorer.EXAMPLES`` its first four. Every word is in the vocabulary.
EXAMPLE_SENTENCES = (
    "The animal didn't cross the street because it was too tired.",
    "The robot sat on the floor because it was tired.",
    "The teacher gave the students their homework.",
    "The cat sat on the mat because it was soft.",
    "The cat that I adopted sleeps.",
)

_WORDS = """
the a an this that these those it its they them their he him his she her i me
my we us our you your who which what where when why how there here
and or but because so if then than while after before until since as
of to in on at by for with from up down out over under into onto off about
is are was were be been being am has have had do does did didn't don't
doesn't isn't wasn't can can't could will would should must may might not no
yes too very also still just only again never always often more most less
all some any many much few each every both one two three first last next
other same
animal cat cats dog dogs bird fish horse cow mouse robot teacher teachers
student students child children boy girl man woman people friend mother father
street road floor mat table chair bed house room door window garden park city
school class homework book books paper letter car bus train tree water food
ball box bag day night morning time year week
sat sit sits sleeps sleep slept cross crossed gave give gives adopted adopt
ran run runs walked walk walks ate eat eats saw see sees said say says went go
goes came come comes took take takes made make makes read reads wrote write
liked like likes wanted want wants knew know thought think looked look played
play found find lost put opened closed fell
tired soft hard big small little old new good bad happy sad hungry angry
hot cold warm long short fast slow quiet loud red blue green black white
. , ? ! ; :
""".split()

#: Lower-case words and punctuation, ``[UNK]`` first (id 0).
VOCAB: tuple[str, ...] = (UNK,) + tuple(dict.fromkeys(_WORDS))
WORD_TO_ID: dict[str, int] = {w: i for i, w in enumerate(VOCAB)}
UNK_ID = WORD_TO_ID[UNK]

_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)*|[^\sa-z0-9]")


def split_words(text: str) -> list[str]:
    """Lower-case, then split into words and single punctuation marks.

    A word may keep an apostrophe inside it: ``"didn't" -> ["didn't"]``.
    ``split_words("The cat sat.") == ["the", "cat", "sat", "."]``.
    """
    check_text("text", text)
    return _TOKEN_RE.findall(text.lower())


def word_ids(text_or_tokens) -> list[int]:
    """Word ids of a sentence (a string, or a list of tokens);
    words not in :data:`VOCAB` become ``UNK_ID``. Anything but a string or a
    list of strings (``None``, a number, a list of ids) is refused."""
    check_text_or_tokens(text_or_tokens)
    tokens = (split_words(text_or_tokens) if isinstance(text_or_tokens, str)
              else list(text_or_tokens))
    return [WORD_TO_ID.get(w, UNK_ID) for w in tokens]


def decode(ids) -> list[str]:
    """Words of a sequence of ids (a list or 1-D tensor, each in
    ``0 .. len(VOCAB) - 1``)."""
    check_decode_ids(ids)
    return [VOCAB[int(i)] for i in ids]


# --- the task ------------------------------------------------------------------

NOT_SCORED, PREVIOUS, LOOKUP = 0, 1, 2
#: Names of the parts, indexed by ``kind``.
KIND_NAMES = ("not scored", "previous", "lookup")


@dataclass(frozen=True)
class TaskConfig:
    """How sequences are drawn. Defaults: short enough to train on one CPU
    core in seconds, long enough that most words repeat."""

    L: int = 16  # sequence length; the example sentences have <= 12 tokens
    n_min: int = 6  # fewest distinct words in a sequence
    n_max: int = 16  # most distinct words; about half the positions are lookups
    vocab_size: int = len(VOCAB)  # words are drawn from ids 0..vocab_size-1

    def __post_init__(self) -> None:
        check_task_config(self)


def targets(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The task's targets ``y`` and parts ``kind`` for word ids ``x``.

    Shapes: ``x`` (B, L) long -> ``y`` (B, L) long, ``kind`` (B, L) long
    (``NOT_SCORED`` / ``PREVIOUS`` / ``LOOKUP``). ``y`` is ``0`` where
    ``kind == NOT_SCORED``. See the module docstring for the rule.
    """
    check_targets(x)
    return _targets_core(x)


def _targets_core(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`targets` with no checks (the in-browser training step exports
    it). Shapes: ``x`` (B, L) -> ``y``, ``kind`` (B, L)."""
    B, L = x.shape
    t = torch.arange(L)[:, None]  # (L, 1) query positions
    j = torch.arange(L)[None, :]  # (1, L) earlier positions
    match = (x[:, :, None] == x[:, None, :]) & (j < t)  # (B, L, L): x_j == x_t
    last = torch.where(match, j, -1).amax(dim=-1)  # (B, L): most recent j, or -1
    lookup = x.gather(1, (last + 1).clamp(max=L - 1))  # (B, L): x_{j+1}
    previous = torch.cat([x[:, :1], x[:, :-1]], dim=1)  # (B, L): x_{t-1}
    is_lookup = last >= 0
    first = j == 0  # (1, L): position 0 is not scored (no earlier word)
    y = torch.where(first, 0, torch.where(is_lookup, lookup, previous))
    kind = torch.where(first, NOT_SCORED, torch.where(is_lookup, LOOKUP, PREVIOUS))
    return y, kind


def targets_reference(words: list) -> list:
    """The same rule as :func:`targets`, written as a plain loop over one
    sequence (any hashable items). Returns ``[(y_t, part name), ...]``, with
    ``(None, "not scored")`` at position 0."""
    check_targets_reference(words)
    out = [(None, KIND_NAMES[NOT_SCORED])]
    for t in range(1, len(words)):
        earlier = [j for j in range(t) if words[j] == words[t]]
        if earlier:
            out.append((words[earlier[-1] + 1], KIND_NAMES[LOOKUP]))
        else:
            out.append((words[t - 1], KIND_NAMES[PREVIOUS]))
    return out


def sample(n: int, cfg: TaskConfig = TaskConfig(), seed: int | None = None,
           generator: torch.Generator | None = None):
    """Draw ``n`` sequences; returns ``(x, y, kind)``, each (n, L) long.

    Pass ``seed`` for a fixed set (the same seed gives the same tensors), or a
    ``generator`` to continue a stream (training batches).
    """
    check_sample(n, cfg, seed, generator)
    g = generator if generator is not None else torch.Generator().manual_seed(seed)
    sizes = torch.randint(cfg.n_min, cfg.n_max + 1, (n,), generator=g)  # (n,)
    # an alphabet per sequence: the first n_i of a random permutation
    alphabets = torch.rand(n, cfg.vocab_size, generator=g).argsort(dim=1)  # (n, V)
    # positions in the alphabet: uniform start, then a step of 1..n_i-1 (mod n_i)
    # each time, so a word never follows itself
    u = torch.rand(n, cfg.L, generator=g)  # (n, L)
    step = (u * (sizes[:, None] - 1)).long() + 1  # (n, L): 1 .. n_i - 1
    step[:, 0] = (u[:, 0] * sizes).long()  # the start: 0 .. n_i - 1
    pick = step.cumsum(dim=1) % sizes[:, None]  # (n, L)
    x = alphabets.gather(1, pick)  # (n, L): word ids
    y, kind = targets(x)
    return x, y, kind


def baselines(x: torch.Tensor, y: torch.Tensor, kind: torch.Tensor) -> dict:
    """Accuracy of rules that use the context but no lookup, per part.

    * ``"uniform"``: a uniformly random word of the vocabulary (expected).
    * ``"previous word"``: always answer ``x_{t-1}``.
    * ``"random prefix word"``: a uniformly random *distinct* word of
      ``x_0 .. x_t`` (expected accuracy).
    """
    check_baselines(x, y, kind)
    B, L = x.shape
    prev = torch.cat([x[:, :1], x[:, :-1]], dim=1)  # (B, L)
    tri = torch.ones(L, L, dtype=torch.bool).tril()  # (L, L): j <= t
    seen = torch.zeros(B, L, int(x.max()) + 1)  # (B, L, V): word v in x_0..x_t
    # positions j > t are replaced by x_0, which is always in the prefix
    seen.scatter_(2, torch.where(tri, x[:, None, :], x[:, :1, None]), 1.0)
    n_seen = seen.sum(-1)  # (B, L): distinct words in x_0..x_t
    p_random = seen.gather(2, y[..., None])[..., 0] / n_seen  # (B, L)
    V = len(VOCAB)
    rules = {
        "uniform": torch.full((B, L), 1.0 / V),
        "previous word": (prev == y).float(),
        "random prefix word": p_random,
    }
    out = {}
    for name, score in rules.items():
        out[name] = {
            "all": float(score[kind != NOT_SCORED].mean()),
            **{KIND_NAMES[k]: float(score[kind == k].mean())
               for k in (PREVIOUS, LOOKUP)},
        }
    return out
