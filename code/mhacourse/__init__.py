"""mhacourse: the code behind the multi-head attention course.

Modules, in course order:

- :mod:`mhacourse.attention` — one head: scaled dot-product attention
- :mod:`mhacourse.masks` — causal and padding masks (``True`` = blocked)
- :mod:`mhacourse.heads` — split ``d_model`` into ``h`` heads and merge them back;
  a head's name (``head_name(0, 0) == "L1H1"``: names count from 1)
- :mod:`mhacourse.tensors` — small exact (float64) matrices for the worked examples
- :mod:`mhacourse.multihead` — multi-head attention (loop and batched), ``W_O``
- :mod:`mhacourse.cost` — a layer's parameters and the FLOPs of its matrix products
- :mod:`mhacourse.machine` — the CPU a timing ran on (chapters and benchmarks)
- :mod:`mhacourse.block` — the transformer block (post-LN and pre-LN)
- :mod:`mhacourse.gqa` — multi-query and grouped-query attention
- :mod:`mhacourse.reference_np` — the same mathematics in NumPy
- :mod:`mhacourse.batching` — padded batches, causal + padding masks, attention dropout
- :mod:`mhacourse.positions` — learned, sinusoidal and rotary positions
- :mod:`mhacourse.decoder` — cross-attention and the decoder layer
- :mod:`mhacourse.kv_cache` — incremental decoding with a key/value cache

Models and analysis:

- :mod:`mhacourse.bert` — the real all-MiniLM-L6-v2 model, run by the modules above;
  :mod:`mhacourse.bert_weights` reads its sizes and weights
- :mod:`mhacourse.head_analysis` — what its heads do: statistics, classes, ablation
- :mod:`mhacourse.interventions` — zero, mean and resample ablation of heads,
  activation patching in both directions, the logit-difference metric and
  named corruptions (on any model with ``forward_heads``)
- :mod:`mhacourse.tasks`, :mod:`mhacourse.tiny_model` — tiny models trained in the course
- :mod:`mhacourse.explorer` — what the attention explorer shows
- :mod:`mhacourse.web_export` — the models exported to ONNX for the explorer
  that runs in the reader's browser

Teaching (math <- plotting <- widgets):

- :mod:`mhacourse.checks` — exercise checkers that say what is wrong, one
  module per concept
- :mod:`mhacourse.plotting` (one module per kind of picture),
  :mod:`mhacourse.plotting_html` — figures and HTML heatmaps
- :mod:`mhacourse.widgets` — controls wired to the plotting functions

Bad input to any of them raises :class:`mhacourse.InputError` (a
``ValueError``; :class:`mhacourse.InputTypeError` is also a ``TypeError``)
with one line naming the argument, what was given, what is allowed and the
fix; the checks live in :mod:`mhacourse._validate`.
"""
import importlib

from ._validate import InputError, InputTypeError
from .attention import attention_scores, scaled_dot_product_attention, softmax
from .batching import attention_dropout, attention_with_dropout, batch_mask, pad_batch
from .block import TransformerBlock, feed_forward, layer_norm
from .config import MHAConfig
from .decoder import (
    DecoderLayerWeights,
    cross_attention,
    decoder_layer,
    decoder_weights_from_torch,
)
from .heads import head_name, merge_heads, split_heads
from .interventions import (
    CORRUPTIONS,
    Pairs,
    ablate,
    ablation_map,
    all_heads,
    corrupt,
    fraction_recovered,
    logit_diff,
    patch_heads,
    patching_map,
)
from .kv_cache import (
    CausalLM,
    KVCache,
    attention_step,
    forward_cached,
    forward_full,
    generate,
    random_causal_lm,
)
from .layer import MultiHeadAttention
from .masks import causal_mask, padding_mask
from .multihead import (
    MHAWeights,
    from_torch,
    head_contributions,
    head_slice,
    multi_head_attention,
    multi_head_attention_fast,
    multi_head_attention_loop,
    output_projection,
    random_weights,
    to_torch,
)
from .positions import embed_with_positions, rotary, rotary_angles, sinusoidal_positions

__version__ = "0.1.0"

# The trained model (mhacourse.bert), loaded on first use: ``mc.load_model``,
# ``mc.encode`` and the rest import mhacourse.bert then, not on ``import mhacourse``.
_LAZY = {"BertOutput": "bert", "encode": "bert", "load_model": "bert",
         "sentence_embedding": "bert"}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    # errors
    "InputError", "InputTypeError",
    # one head, masks, heads
    "attention_scores", "scaled_dot_product_attention", "softmax",
    "causal_mask", "padding_mask", "head_name", "merge_heads", "split_heads",
    # multi-head attention
    "MHAConfig", "MHAWeights", "MultiHeadAttention", "from_torch", "to_torch",
    "head_contributions", "head_slice", "multi_head_attention",
    "multi_head_attention_fast", "multi_head_attention_loop", "output_projection",
    "random_weights",
    # the block
    "TransformerBlock", "feed_forward", "layer_norm",
    # the trained model (loaded lazily)
    "BertOutput", "encode", "load_model", "sentence_embedding",
    # batches, positions, cross-attention, the key/value cache
    "attention_dropout", "attention_with_dropout", "batch_mask", "pad_batch",
    "embed_with_positions", "rotary", "rotary_angles", "sinusoidal_positions",
    "DecoderLayerWeights", "cross_attention", "decoder_layer",
    "decoder_weights_from_torch",
    "CausalLM", "KVCache", "attention_step", "forward_cached", "forward_full",
    "generate", "random_causal_lm",
    # interventions: ablation and activation patching
    "CORRUPTIONS", "Pairs", "ablate", "ablation_map", "all_heads", "corrupt",
    "fraction_recovered", "logit_diff", "patch_heads", "patching_map",
]
