"""Checkers for the exercises: they say *what* is wrong, not just "incorrect".

Each ``check_*`` runs the learner's function on fixed inputs, compares it with
the package's answer and with the usual mistakes, and returns a
:class:`Verdict` whose message names the mistake. Pure computation: no
plotting, no widgets.

One module per group of chapters, in course order; the helpers they share
(:class:`Verdict`, running the learner's function, comparing its result) live
in :mod:`mhacourse.checks._verdict`. Import the checkers from here:
``from mhacourse.checks import check_attention``.
"""
from ..cost import mha_flops  # the formula, re-exported for older notebooks
from ..heads import score_rank_bound  # likewise
from ._verdict import Verdict
from .ch01_one_head import check_attention
from .ch02_03_heads import (
    _mha_variants,
    check_head_weights,
    check_multi_head,
    check_param_count,
    check_split_heads,
)
from .ch04_what_heads_learn import (
    _ch04_attention,
    _ch04_entropy_attention,
    check_previous_token_score,
    check_row_entropy,
)
from .ch05_07_concat_output_cost import check_merge_heads, check_mha_flops, check_remove_head
from .ch08_09_heads_speed import (
    _ch09_blockwise,
    check_batched_heads,
    check_blockwise_attention,
    check_score_rank,
    check_weights_memory,
)
from .ch10_11_block_beyond import (
    check_causal_mask,
    check_kv_cache,
    check_layer_norm,
    check_pre_ln_block,
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
    # chapters 10-11
    "check_layer_norm", "check_pre_ln_block", "check_causal_mask", "check_kv_cache",
]
# private variants the package tests exercise directly
_TESTED_PRIVATE = (_mha_variants, _ch04_attention, _ch04_entropy_attention, _ch09_blockwise)
