"""What the heads of a trained model do: statistics, classes, claims, ablation.

Pure computation on :mod:`mhacourse.bert` (all-MiniLM-L6-v2, 6 layers x
12 heads); the plots live elsewhere. Four questions, on a fixed set of
:data:`SENTENCES`:

1. **Where does each head look?** (:func:`head_statistics`). For head i of
   layer l, the mean over query tokens q (every real token except ``[CLS]``
   and ``[SEP]``, pooled over all sentences) of

   - ``prev = A[q, q-1]``, ``next = A[q, q+1]``, ``self = A[q, q]``,
   - ``cls = A[q, [CLS]]``, ``sep = A[q, [SEP]]``,
     ``punct = sum_{k punctuation} A[q, k]``,
   - the row entropy ``H_q = -sum_k A[q, k] ln A[q, k]`` (nats), and
     ``H_q / ln n``, which is 1 for uniform attention over the n tokens.

2. **What kind of head is it?** (:func:`classify_heads`), in the manner of
   Clark et al. (2019), "What Does BERT Look At?": the largest of
   ``prev``, ``next``, ``self`` and ``sink = cls + sep`` names the head if it
   is at least :data:`THRESHOLD` = 0.5 (over half of the attention); otherwise
   the head is *broad* if its mean ``H / ln n`` is at least :data:`BROAD` =
   0.8, else *mixed*.

3. **Do the course's example sentences hold?** (:func:`check_claims`): does
   some head send "it" mostly to "animal", "their" to "students", ...?
   Attention between words, as Clark et al. do for words that WordPiece
   splits: *to* a word = the sum over its pieces, *from* a word = the mean
   over its pieces.

4. **Which heads matter?** (:func:`ablation_ranking`, :func:`pruning_curve`):
   remove one head (``head_mask``, see :func:`mhacourse.bert.bert_layer`)
   and measure the cosine between the ablated and the intact mean-pooled
   sentence embedding, averaged over the sentences; then remove heads one
   after another, least important first, and follow the cosine (cf. Michel
   et al. 2019, "Are Sixteen Heads Really Better than One?", who prune by an
   importance score and follow task accuracy instead).
"""
from __future__ import annotations

import numbers
import string
from dataclasses import dataclass

import torch

from ._validate import (
    InputError,
    InputTypeError,
    as_int,
    check_finite,
    check_positive_int,
    check_real,
    check_tensor,
    check_text,
    check_texts,
    describe,
)
from .ablation_cache import AblationCache
from .bert import Bert, BertOutput, encode, load_model
from .bert_weights import check_bert_model
from .heads import head_name
from .tasks import EXAMPLE_SENTENCES

# --- input checks: the rules of this module's public functions -----------

def check_attention_statistics(attentions, tokens) -> None:
    for name, v in (("attentions", attentions), ("tokens", tokens)):
        if not isinstance(v, (list, tuple)):
            raise InputTypeError(f"{name} must be a list, one entry per sentence; got "
                                 f"{describe(v)}.")
    for s, A in enumerate(attentions):
        check_tensor(f"attentions[{s}]", A, legend="(n_layers, h, n, n)")
        check_finite(f"attentions[{s}]", A, option=False)
    for s, toks in enumerate(tokens):
        if isinstance(toks, str) or not isinstance(toks, (list, tuple)) or not all(
                isinstance(x, str) for x in toks):
            raise InputTypeError(f"tokens[{s}] must be a list of token strings; got "
                                 f"{describe(toks)}.")


def check_head_statistics(texts, model) -> None:
    check_texts("texts", texts)
    check_bert_model(model)


def check_classify_heads(stats, threshold, broad) -> None:
    if not isinstance(stats, HeadStats):
        raise InputTypeError(f"stats must be a HeadStats (head_statistics() or "
                             f"attention_statistics()); got {describe(stats)}.")
    check_real("threshold", threshold, low=0.0, high=1.0)
    check_real("broad", broad, low=0.0, high=1.0)


def check_class_counts(labels) -> None:
    if not isinstance(labels, (list, tuple)) or not all(
            isinstance(row, (list, tuple)) and all(isinstance(c, str) for c in row)
            for row in labels):
        raise InputTypeError(f"labels must be classify_heads()'s list of lists of "
                             f"class names; got {describe(labels)}.")


def check_word_attention(A, spans) -> None:
    check_tensor("A", A, min_ndim=2, legend="(..., n, n)")
    n = A.shape[-1]
    ok = isinstance(spans, (list, tuple)) and spans and all(
        isinstance(s, (list, tuple)) and s and all(
            isinstance(p, numbers.Integral) and not isinstance(p, bool) and 0 <= p < n
            for p in s) for s in spans)
    if not ok:
        raise InputError(f"spans must be a non-empty list of non-empty lists of token "
                         f"positions 0..{n - 1}; got {describe(spans)}.")


def check_claim_args(claim, model, top) -> None:
    if not isinstance(claim, Claim):
        raise InputTypeError(f"claim must be a head_analysis.Claim(sentence, source, "
                             f"target, alternative); got {describe(claim)}.")
    for field in ("sentence", "source", "target", "alternative"):
        if not isinstance(getattr(claim, field), str):
            raise InputTypeError(f"claim.{field} must be a str; got "
                                 f"{describe(getattr(claim, field))}.")
    check_bert_model(model)
    check_positive_int("top", top)


def check_claims_args(claims, model, top) -> None:
    if isinstance(claims, str) or not isinstance(claims, (list, tuple)):
        raise InputTypeError(f"claims must be a list of head_analysis.Claim; got "
                             f"{describe(claims)}.")
    check_bert_model(model)
    check_positive_int("top", top)


def check_ablation_args(texts, model, cache) -> None:
    check_texts("texts", texts)
    check_bert_model(model)
    if cache is not None and not isinstance(cache, AblationCache):
        raise InputTypeError(f"cache must be an AblationCache or None; got "
                             f"{describe(cache)}.")


def check_order(order) -> None:
    if order is None:
        return
    if isinstance(order, (str, torch.Tensor)) or not isinstance(order, (list, tuple)):
        raise InputTypeError(f"order must be a list of (layer, head) pairs; got "
                             f"{describe(order)}.")
    for k, p in enumerate(order):
        if not isinstance(p, (list, tuple)) or len(p) != 2:
            raise InputTypeError(f"order[{k}] must be a (layer, head) pair; got "
                                 f"{describe(p)}.")
        as_int(f"order[{k}][0] (layer)", p[0])
        as_int(f"order[{k}][1] (head)", p[1])


def check_pruning_args(order, texts, model, cache, ablation) -> None:
    check_order(order)
    check_ablation_args(texts, model, cache)
    if ablation is not None and not isinstance(ablation, Ablation):
        raise InputTypeError(f"ablation must be an Ablation (ablation_ranking()) or "
                             f"None; got {describe(ablation)}.")


def check_analyse(texts, claims, model) -> None:
    """:func:`analyse`'s arguments, before the model runs: those of
    :func:`head_statistics` and :func:`check_claims`."""
    check_head_statistics(texts, model)
    check_claims_args(claims, model, 3)

def check_report(a, top) -> None:
    if not isinstance(a, HeadAnalysis):
        raise InputTypeError(f"a must be analyse()'s HeadAnalysis; got {describe(a)}.")
    check_positive_int("top", top)


# The course's example sentences (the "seeds"), then 30 varied ones: 35 in all,
# 408 WordPiece tokens besides [CLS] and [SEP]; 8 words split into pieces
# ("postpone" -> post ##pone, "knitted" -> knit ##ted, "scarves", "crib", ...).
SEED_SENTENCES = EXAMPLE_SENTENCES
SENTENCES = SEED_SENTENCES + (
    "She poured the coffee into a mug and handed it to her friend.",
    "After the storm, the fishermen repaired their nets on the beach.",
    "My brother, who lives in Toronto, is visiting us next week.",
    "Why did the committee postpone the vote until Friday?",
    "The scientists published their results in a well-known journal.",
    "A small dog barked at the mail carrier every morning.",
    "The old bridge was closed because engineers found cracks in it.",
    "If you heat ice, it melts; if you cool water, it freezes.",
    "The children laughed when the clown dropped his hat.",
    "Please send me the report before the meeting starts.",
    "The museum displays paintings that were stolen during the war.",
    "Although it was raining, the marathon began on time.",
    "Neural networks learn representations from large amounts of data.",
    "The chef tasted the soup and added more salt.",
    "Maria told Anna that she had won the prize.",
    "The keys that I lost yesterday were under the sofa.",
    "Tomorrow's forecast predicts heavy snow in the mountains.",
    "He couldn't open the jar, so he asked his neighbour for help.",
    "The trophy didn't fit into the suitcase because it was too big.",
    "Every student who finished the exam early left the room quietly.",
    "The price of electricity rose by 12 percent last year.",
    "Birds migrate south when the days become shorter.",
    "The lawyer questioned the witness, but the witness refused to answer.",
    "Reading novels improves empathy, according to several studies.",
    "The train to Edinburgh departs from platform nine at 8:15.",
    "Our grandmother knitted scarves for all of her grandchildren.",
    "The software crashed because the file it needed was missing.",
    "Can you tell me where the nearest pharmacy is?",
    "The volcano erupted, and ash covered the surrounding villages.",
    "Despite the noise, the baby slept peacefully in her crib.",
)

THRESHOLD = 0.5  # a head "does" X if over half its attention goes to X
BROAD = 0.8  # broad: mean entropy >= 80% of uniform attention's, ln n
CLASSES = ("previous", "next", "self", "sink", "broad", "mixed")
SPECIAL = ("[CLS]", "[SEP]")


def is_punctuation(token: str) -> bool:
    """A token made only of punctuation (``.``, ``,``, ``'``, ...)."""
    check_text("token", token)
    return token not in SPECIAL and all(c in string.punctuation for c in token)


# ------------------------------------------------------- 1. head statistics

@dataclass
class HeadStats:
    """Per-head means over the query tokens; every field is (n_layers, h).

    ``prev``, ``next``, ``self_``, ``cls``, ``sep``, ``punct``: mean
    attention to the previous token, the next token, itself, ``[CLS]``,
    ``[SEP]``, punctuation. ``entropy``: mean row entropy in nats;
    ``entropy_norm``: mean of ``H_q / ln n``. ``n_rows``: query rows pooled.
    """

    prev: torch.Tensor
    next: torch.Tensor
    self_: torch.Tensor
    cls: torch.Tensor
    sep: torch.Tensor
    punct: torch.Tensor
    entropy: torch.Tensor
    entropy_norm: torch.Tensor
    n_rows: int

    @property
    def sink(self) -> torch.Tensor:
        """``cls + sep``: attention parked on the special tokens."""
        return self.cls + self.sep


def attention_statistics(attentions, tokens) -> HeadStats:
    """:class:`HeadStats` from one (n_layers, h, n, n) tensor per sentence.

    ``attentions[s]`` holds sentence s's weights, real tokens only, rows
    summing to 1; ``tokens[s]`` its n tokens (``[CLS]`` first, ``[SEP]``
    last). Query rows: every token that is not ``[CLS]`` or ``[SEP]``.
    """
    check_attention_statistics(attentions, tokens)
    if len(attentions) != len(tokens) or not attentions:
        raise InputError(
            f"attentions and tokens: give one attention tensor per token list (at least one); got "
            f"{len(attentions)} tensors and {len(tokens)} token lists."
        )
    sums, n_rows = None, 0
    for s, (A, toks) in enumerate(zip(attentions, tokens)):
        n = A.shape[-1]
        if A.ndim != 4 or A.shape[-2] != n or len(toks) != n:
            raise InputError(
                f"attentions[{s}]: attention must be (n_layers, h, n, n) with n = "
                f"{len(toks)} tokens; got shape {tuple(A.shape)}."
            )
        q = torch.tensor([i for i, t in enumerate(toks) if t not in SPECIAL])
        if len(q) == 0 or q.min() == 0 or q.max() == n - 1:
            raise InputError(
                f"tokens[{s}]: tokens must start with [CLS], end with [SEP] "
                f"and hold at least one word; got {toks}."
            )
        A = A.double()
        rows = A[..., q, :]  # (n_layers, h, r, n): the word queries' rows
        cls = torch.tensor([t == "[CLS]" for t in toks], dtype=A.dtype)  # (n,)
        sep = torch.tensor([t == "[SEP]" for t in toks], dtype=A.dtype)
        pun = torch.tensor([is_punctuation(t) for t in toks], dtype=A.dtype)
        H = -torch.xlogy(rows, rows).sum(-1)  # (n_layers, h, r), 0 ln 0 = 0
        per_row = {
            "prev": A[..., q, q - 1],  # (n_layers, h, r)
            "next": A[..., q, q + 1],
            "self_": A[..., q, q],
            "cls": rows @ cls,
            "sep": rows @ sep,
            "punct": rows @ pun,
            "entropy": H,
            "entropy_norm": H / torch.log(torch.tensor(float(n))),
        }
        part = {k: v.sum(-1) for k, v in per_row.items()}  # (n_layers, h)
        sums = part if sums is None else {k: sums[k] + part[k] for k in sums}
        n_rows += len(q)
    return HeadStats(**{k: (v / n_rows).float() for k, v in sums.items()},
                     n_rows=n_rows)


def sentence_attentions(out) -> list[torch.Tensor]:
    """One (n_layers, h, n, n) tensor per sentence of a :class:`BertOutput`,
    real tokens only."""
    check_output(out)
    return [torch.stack([out.attention(l, s) for l in range(len(out.attentions))])
            for s in range(len(out.texts))]


def head_statistics(texts=SENTENCES, model: Bert | None = None) -> HeadStats:
    """:func:`attention_statistics` of the model on ``texts``."""
    check_head_statistics(texts, model)
    out = encode(list(texts), model=model)
    return attention_statistics(sentence_attentions(out), out.tokens)


# ------------------------------------------------------- 2. classification

def classify_heads(stats: HeadStats, threshold: float = THRESHOLD,
                   broad: float = BROAD) -> list[list[str]]:
    """Name every head: ``labels[l][i]`` is one of :data:`CLASSES`.

    The largest of ``prev``, ``next``, ``self`` and ``sink`` (= cls + sep)
    names the head if it is ``>= threshold``; else ``"broad"`` if
    ``entropy_norm >= broad``; else ``"mixed"``.
    """
    check_classify_heads(stats, threshold, broad)
    scores = torch.stack(
        [stats.prev, stats.next, stats.self_, stats.sink])  # (4, n_layers, h)
    best, which = scores.max(dim=0)  # (n_layers, h)
    n_layers, h = best.shape
    labels = []
    for l in range(n_layers):
        row = []
        for i in range(h):
            if best[l, i] >= threshold:
                row.append(CLASSES[int(which[l, i])])
            elif stats.entropy_norm[l, i] >= broad:
                row.append("broad")
            else:
                row.append("mixed")
        labels.append(row)
    return labels


def class_counts(labels) -> dict[str, int]:
    """How many heads fall in each class, in :data:`CLASSES` order."""
    check_class_counts(labels)
    flat = [c for row in labels for c in row]
    return {c: flat.count(c) for c in CLASSES}


# ------------------------------------------------------- 3. the seeds' claims

@dataclass(frozen=True)
class Claim:
    """"In ``sentence``, some head sends ``source`` mostly to ``target``"
    (rather than to ``alternative``, the tempting wrong answer)."""

    sentence: str
    source: str
    target: str
    alternative: str


SEED_CLAIMS = (
    Claim(SENTENCES[0], "it", "animal", "street"),
    Claim(SENTENCES[1], "it", "robot", "floor"),
    Claim(SENTENCES[2], "their", "students", "teacher"),
    Claim(SENTENCES[3], "it", "mat", "cat"),
    Claim(SENTENCES[4], "sleeps", "cat", "i"),
)


@dataclass
class ClaimResult:
    """The answer to one :class:`Claim`.

    ``to_target``, ``to_alternative``: (n_layers, h) word-level attention of
    ``source`` to each. ``best``: the top heads by ``to_target``, as
    ``(layer, head, to_target, to_alternative, top word of that row)``.
    ``pieces``: the WordPiece tokens of source, target and alternative.
    """

    claim: Claim
    to_target: torch.Tensor
    to_alternative: torch.Tensor
    best: list[tuple[int, int, float, float, str]]
    pieces: dict[str, list[str]]

    @property
    def holds(self) -> bool:
        """Some head gives the target over half of the source's attention."""
        return bool((self.to_target > THRESHOLD).any())

    @property
    def n_prefer_target(self) -> int:
        """Heads that give the target more than the alternative."""
        return int((self.to_target > self.to_alternative).sum())


def word_attention(A: torch.Tensor, spans: list[list[int]]) -> torch.Tensor:
    """Token attention (..., n, n) -> word attention (..., W, W).

    ``spans[w]``: the token positions of word w. *From* a word: the mean of
    its pieces' rows; *to* a word: the sum of its pieces' columns (Clark et
    al. 2019). Attention to ``[CLS]``/``[SEP]`` is left out, so rows sum to
    at most 1.
    """
    check_word_attention(A, spans)
    rows = torch.stack([A[..., s, :].mean(-2) for s in spans], dim=-2)  # (..., W, n)
    return torch.stack([rows[..., s].sum(-1) for s in spans], dim=-1)  # (..., W, W)


def check_claim(claim: Claim, model: Bert | None = None, top: int = 3,
                out=None) -> ClaimResult:
    """Measure one claim over all heads; see :class:`ClaimResult`."""
    check_claim_args(claim, model, top)
    out = encode(claim.sentence, model=model) if out is None else out
    words = out.words(0)
    names = [w for w, _ in words]
    index = {}
    for role in (claim.source, claim.target, claim.alternative):
        if role not in names:
            raise InputError(f"claim: {role!r} is not a word of {claim.sentence!r}; "
                             f"its words are {names}.")
        index[role] = names.index(role)  # the first occurrence
    A = sentence_attentions(out)[0]  # (n_layers, h, n, n)
    Aw = word_attention(A, [s for _, s in words])  # (n_layers, h, W, W)
    src = Aw[:, :, index[claim.source]]  # (n_layers, h, W)
    to_t = src[..., index[claim.target]]  # (n_layers, h)
    to_a = src[..., index[claim.alternative]]
    h = to_t.shape[1]
    best = []
    for flat in to_t.flatten().argsort(descending=True)[:top].tolist():
        l, i = divmod(flat, h)
        best.append((l, i, float(to_t[l, i]), float(to_a[l, i]),
                     names[int(src[l, i].argmax())]))
    pieces = {w: [out.tokens[0][p] for p in words[index[w]][1]] for w in index}
    return ClaimResult(claim, to_t, to_a, best, pieces)


def check_claims(claims=SEED_CLAIMS, model: Bert | None = None,
                 top: int = 3) -> list[ClaimResult]:
    """:func:`check_claim` for each claim."""
    check_claims_args(claims, model, top)
    return [check_claim(c, model, top) for c in claims]


# --------------------------------------------------------------- 4. ablation

@dataclass
class Ablation:
    """``cos[l, i]``: mean cosine between the embedding without head i of
    layer l and the intact one (1 = no change). ``ranking``: every head as
    ``(layer, head, cos)``, most important (lowest cosine) first."""

    cos: torch.Tensor
    ranking: list[tuple[int, int, float]]


def ablation_ranking(texts=SENTENCES, model: Bert | None = None,
                     cache: AblationCache | None = None) -> Ablation:
    """Remove one head at a time; rank heads by how much the mean-pooled
    sentence embedding moves (``1 - cos``), averaged over ``texts``."""
    check_ablation_args(texts, model, cache)
    model = load_model() if model is None else model
    cache = AblationCache(texts, model) if cache is None else cache
    n_layers, h = model.config.n_layers, model.config.h
    cos = torch.stack([cache.single_head_cosines(l) for l in range(n_layers)])
    ranking = sorted(((l, i, float(cos[l, i])) for l in range(n_layers)
                      for i in range(h)), key=lambda r: r[2])
    return Ablation(cos, ranking)


def check_output(out) -> None:
    if not isinstance(out, BertOutput):
        raise InputTypeError(f"out must be what mc.encode(texts) returns (a "
                             f"BertOutput); got {describe(out)}.")


@dataclass
class PruningCurve:
    """``cos[k]``: mean cosine to the intact embedding after removing the
    first k heads of ``order`` (``cos[0] = 1``); ``order``: (layer, head)."""

    order: list[tuple[int, int]]
    cos: list[float]

    def heads_removable(self, min_cos: float) -> int:
        """How many heads go, in this order, before the cosine first falls
        below ``min_cos``."""
        for k, c in enumerate(self.cos):
            if c < min_cos:
                return k - 1
        return len(self.cos) - 1


def pruning_curve(order=None, texts=SENTENCES, model: Bert | None = None,
                  cache: AblationCache | None = None,
                  ablation: Ablation | None = None) -> PruningCurve:
    """Remove heads cumulatively, in ``order`` (default: least important first
    by :func:`ablation_ranking`), and follow the mean cosine to the intact
    sentence embedding. Each step reruns only the layers from the removed
    head's on."""
    check_pruning_args(order, texts, model, cache, ablation)
    model = load_model() if model is None else model
    cache = AblationCache(texts, model) if cache is None else cache
    if order is None:
        if ablation is None:
            ablation = ablation_ranking(texts, model, cache)
        order = [(l, i) for l, i, _ in reversed(ablation.ranking)]
    n_layers, h = model.config.n_layers, model.config.h
    order = [(int(l), int(i)) for l, i in order]
    bad = [p for p in order if not (0 <= p[0] < n_layers and 0 <= p[1] < h)]
    if bad or len(set(order)) != len(order):
        raise InputError(
            f"order must list distinct (layer, head) pairs with layer < "
            f"{n_layers} and head < {h}; got out of range {bad[:3]} or repeats."
        )
    mask = torch.ones(n_layers, h)
    cos, states = [1.0], None
    for l, i in order:
        mask[l, i] = 0.0
        c, states = cache.cosines(mask, start=l, states=states)
        cos.append(c)
    return PruningCurve(order, cos)


# ----------------------------------------------------------------- together

@dataclass
class HeadAnalysis:
    """Everything above, on one sentence set."""

    stats: HeadStats
    labels: list[list[str]]
    counts: dict[str, int]
    claims: list[ClaimResult]
    ablation: Ablation
    curve: PruningCurve


def analyse(texts=SENTENCES, claims=SEED_CLAIMS,
            model: Bert | None = None) -> HeadAnalysis:
    """Statistics, classes, claims, ablation ranking and pruning curve."""
    check_analyse(texts, claims, model)
    model = load_model() if model is None else model
    stats = head_statistics(texts, model)
    labels = classify_heads(stats)
    cache = AblationCache(texts, model)
    ablation = ablation_ranking(texts, model, cache)
    curve = pruning_curve(None, texts, model, cache, ablation)
    return HeadAnalysis(stats, labels, class_counts(labels),
                        check_claims(claims, model), ablation, curve)


def report(a: HeadAnalysis, top: int = 5) -> str:
    """A plain-text summary of :func:`analyse`'s result; heads are named
    by :func:`~mhacourse.heads.head_name` and layers numbered from 1 (L1H1)."""
    check_report(a, top)
    s = a.stats
    lines = [f"classes ({s.n_rows} query rows): "
             + ", ".join(f"{k} {v}" for k, v in a.counts.items())]
    for c in CLASSES[:4]:
        heads = [head_name(l, i) for l, row in enumerate(a.labels)
                 for i, lab in enumerate(row) if lab == c]
        lines.append(f"  {c}: {' '.join(heads) or '-'}")
    lines.append("layer  " + " ".join(f"{i + 1:>2}" for i in range(len(a.labels[0]))))
    abbrev = {"previous": "P", "next": "N", "self": "S", "sink": "K",
              "broad": "B", "mixed": "."}
    for l, row in enumerate(a.labels):
        lines.append(f"  {l + 1}    " + " ".join(f"{abbrev[c]:>2}" for c in row))
    for name in ("prev", "next", "self_", "sink", "punct", "entropy_norm"):
        t = getattr(s, name)
        l, i = divmod(int(t.argmax()), t.shape[1])
        lines.append(f"max {name.rstrip('_')}: {head_name(l, i)} = {float(t.max()):.3f}")
    for r in a.claims:
        c = r.claim
        lines.append(f"claim {c.source!r} -> {c.target!r} (vs {c.alternative!r}) "
                     f"in {c.sentence!r}: holds={r.holds}, "
                     f"{r.n_prefer_target}/{r.to_target.numel()} heads prefer "
                     f"target; pieces {r.pieces}")
        for l, i, wt, wa, wtop in r.best:
            lines.append(f"    {head_name(l, i)}: {wt:.3f} to {c.target!r}, {wa:.3f} to "
                         f"{c.alternative!r}, top word {wtop!r}")
    rk = a.ablation.ranking
    lines.append("most important (cos without the head): "
                 + ", ".join(f"{head_name(l, i)} {c:.4f}" for l, i, c in rk[:top]))
    lines.append("least important: "
                 + ", ".join(f"{head_name(l, i)} {c:.5f}" for l, i, c in rk[-top:]))
    for t in (0.99, 0.95, 0.9, 0.8):
        lines.append(f"heads removable with cos >= {t}: "
                     f"{a.curve.heads_removable(t)} of {len(a.curve.order)}")
    lines.append("curve cos at k removed: " + ", ".join(
        f"{k}:{a.curve.cos[k]:.3f}" for k in range(0, len(a.curve.cos), 6)))
    return "\n".join(lines)
