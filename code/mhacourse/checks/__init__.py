"""Checkers for the exercises: they say *what* is wrong, not just "incorrect".

Each ``check_*`` runs the learner's function on fixed inputs, compares it with
the package's answer and with the usual mistakes, and returns a
:class:`Verdict` whose message names the mistake. Pure computation: no
plotting, no widgets.

One module per concept, in course order (:mod:`~mhacourse.checks.one_head`,
:mod:`~mhacourse.checks.heads`, :mod:`~mhacourse.checks.head_patterns`,
:mod:`~mhacourse.checks.concat_output`, :mod:`~mhacourse.checks.rank_speed`,
:mod:`~mhacourse.checks.block`, :mod:`~mhacourse.checks.sequences`); one
verdict mechanism they share (:class:`Verdict`, the ``_verdicts`` decorator,
running the learner's function, comparing its result) in
:mod:`mhacourse.checks._verdict`. Import the checkers from here:
``from mhacourse.checks import check_attention``.
"""
from ..cost import mha_flops  # the formula, re-exported for older notebooks
from ..heads import score_rank_bound  # likewise
from ._verdict import Verdict
from .block import (
    check_causal_mask,
    check_kv_cache,
    check_layer_norm,
    check_pre_ln_block,
)
from .concat_output import check_merge_heads, check_mha_flops, check_remove_head
from .head_patterns import (
    _ch04_attention,
    _ch04_entropy_attention,
    check_previous_token_score,
    check_row_entropy,
)
from .heads import (
    _mha_variants,
    check_head_weights,
    check_multi_head,
    check_param_count,
    check_split_heads,
)
from .one_head import check_attention
from .rank_speed import (
    _ch09_blockwise,
    check_batched_heads,
    check_blockwise_attention,
    check_score_rank,
    check_weights_memory,
)
from .sequences import (
    check_batch_mask,
    check_cached_step,
    check_cross_attention,
    check_sinusoidal,
)

__all__ = [
    "Verdict",
    # chapter 1
    "check_attention",
    # chapters 2-3
    "check_split_heads", "check_param_count", "check_multi_head", "check_head_weights",
    # chapter 4
    "check_previous_token_score", "check_row_entropy",
    # chapters 5-7
    "check_merge_heads", "check_remove_head", "mha_flops", "check_mha_flops",
    # chapters 8-9
    "score_rank_bound", "check_score_rank", "check_batched_heads",
    "check_weights_memory", "check_blockwise_attention",
    # chapters 10 and 12
    "check_layer_norm", "check_pre_ln_block", "check_causal_mask", "check_kv_cache",
    # chapters 13-16
    "check_batch_mask", "check_sinusoidal", "check_cross_attention",
    "check_cached_step",
]
# private variants the package tests exercise directly
_TESTED_PRIVATE = (_mha_variants, _ch04_attention, _ch04_entropy_attention, _ch09_blockwise)
