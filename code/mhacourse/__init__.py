"""mhacourse: the code behind the multi-head attention course.

Modules, in course order:

- :mod:`mhacourse.attention` — one head: scaled dot-product attention
- :mod:`mhacourse.masks` — causal and padding masks (``True`` = blocked)
- :mod:`mhacourse.heads` — split ``d_model`` into ``h`` heads and merge them back
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

- :mod:`mhacourse.bert` — the real all-MiniLM-L6-v2 model, run by the modules above
- :mod:`mhacourse.head_analysis` — what its heads do: statistics, classes, ablation
- :mod:`mhacourse.tasks`, :mod:`mhacourse.tiny_model` — tiny models trained in the course
- :mod:`mhacourse.explorer` — what the attention explorer shows
- :mod:`mhacourse.web_export` — the models exported to ONNX for the explorer
  that runs in the reader's browser

Teaching (math <- plotting <- widgets):

- :mod:`mhacourse.checks`, :mod:`mhacourse.checks_new_topics` — exercise
  checkers that say what is wrong
- :mod:`mhacourse.plotting`, :mod:`mhacourse.plotting_html` — figures and HTML heatmaps
- :mod:`mhacourse.widgets` — controls wired to the plotting functions

Bad input to any of them raises :class:`mhacourse.InputError` (a
``ValueError``; :class:`mhacourse.InputTypeError` is also a ``TypeError``)
with one line naming the argument, what was given, what is allowed and the
fix; the checks live in :mod:`mhacourse._validate`.
"""
from ._validate import InputError, InputTypeError
from .attention import attention_scores, scaled_dot_product_attention, softmax
from .block import TransformerBlock, feed_forward, layer_norm
from .config import MHAConfig
from .heads import merge_heads, split_heads
from .masks import causal_mask, padding_mask
from .multihead import (
    MHAWeights, MultiHeadAttention, from_torch, head_contributions, head_slice,
    multi_head_attention, multi_head_attention_fast, multi_head_attention_loop,
    output_projection, random_weights, to_torch,
)

__version__ = "0.1.0"

# A trained model through the course's code (mhacourse.bert, mhacourse.head_analysis)
from .bert import BertOutput, encode, load_model, sentence_embedding  # noqa: E402

# --------------------------------------------------------------------------
# Topics added after the first release (issue 12): masks in batches,
# positions, cross-attention, the key/value cache. Kept in their own modules.
from .batching import (  # noqa: E402
    attention_dropout, attention_with_dropout, batch_mask, pad_batch,
)
from .positions import (  # noqa: E402
    embed_with_positions, rotary, rotary_angles, sinusoidal_positions,
)
from .decoder import (  # noqa: E402
    DecoderLayerWeights, cross_attention, decoder_layer, decoder_weights_from_torch,
)
from .kv_cache import (  # noqa: E402
    CausalLM, KVCache, attention_step, forward_cached, forward_full, generate,
    random_causal_lm,
)
