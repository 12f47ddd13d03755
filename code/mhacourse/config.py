"""Model sizes in one place, with where each default comes from."""
from __future__ import annotations

from dataclasses import dataclass

from ._validate import check_heads


@dataclass(frozen=True)
class MHAConfig:
    """Sizes of one multi-head attention layer.

    ==========  ============================  =====================
    course      meaning                       ``nn.MultiheadAttention``
    ==========  ============================  =====================
    ``d_model`` width of every token vector   ``embed_dim``
    ``h``       number of heads               ``num_heads``
    ``d_k``     width of one head, d_model/h  ``head_dim``
    ==========  ============================  =====================
    """

    d_model: int = 512  # Vaswani et al. (2017), base model
    h: int = 8  # Vaswani et al. (2017), base model

    def __post_init__(self) -> None:
        check_heads(self.d_model, self.h)

    @property
    def d_k(self) -> int:
        """Per-head width, ``d_model // h`` (PyTorch: ``head_dim``)."""
        return self.d_model // self.h
