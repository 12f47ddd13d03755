"""The attention explorer's models in one catalogue: which tiny models
exist, what each is called and where its file lives.

The notebook explorer (:mod:`mhacourse.explorer`), the browser export
(:mod:`mhacourse.web_export`) and the training script
(``scripts/train_tiny_models.py``) all read these, so a cell added here is
trained, exported and offered everywhere.

Two views of the same models:

- **wider heads**: ``h`` in :data:`GRID_H` times ``d_k`` in :data:`GRID_DK`
  (``d_model = h * d_k`` grows with h); the notebook explorer's grid;
- **same budget**: ``d_model = BUDGET_D_MODEL`` cut into ``h`` in
  :data:`BUDGET_H` heads of ``d_k = BUDGET_D_MODEL / h``.
"""
from __future__ import annotations

import os
from pathlib import Path

from ._validate import InputError, check_bool, check_positive_int
from .tiny_model.files import model_name

__all__ = ["GRID_H", "GRID_DK", "BUDGET_D_MODEL", "BUDGET_H", "SEED",
           "STEPS_BY_D_MODEL", "steps_for", "grid_cells", "budget_cells", "tiny_cells",
           "model_name",
           "assets_dir", "models_dir", "tiny_model_path"]

GRID_H = (1, 2, 4, 8)  # head counts of the trained grid ("wider heads")
GRID_DK = (8, 16, 32)  # per-head widths of the trained grid
BUDGET_D_MODEL = 64  # "same budget" mode: d_model fixed, h over its divisors
BUDGET_H = (1, 2, 4, 8, 16)  # d_k = 64 / h = 64, 32, 16, 8, 4
SEED = 0  # every catalogued model's one seed (initialisation and batches)
#: Training steps by d_model: small models need more steps and cost less per
#: step (scripts/train_tiny_models.py; the in-browser trainer, web_train).
STEPS_BY_D_MODEL = {8: 1500, 16: 1500, 32: 1200, 64: 800, 128: 500, 256: 400}


def steps_for(d_model: int) -> int:
    """The steps a model of width ``d_model`` trains for: those of
    :data:`STEPS_BY_D_MODEL` at the nearest width not below it (past the
    widest, the widest's). ``d_model``: a positive whole number."""
    d_model = check_positive_int("d_model", d_model)
    widths = [w for w in STEPS_BY_D_MODEL if w >= d_model]
    return STEPS_BY_D_MODEL[min(widths) if widths else max(STEPS_BY_D_MODEL)]


def grid_cells() -> list[tuple[int, int]]:
    """The wider-heads grid: every ``(h, d_k)`` of ``GRID_H x GRID_DK``."""
    return [(h, d_k) for h in GRID_H for d_k in GRID_DK]


def budget_cells() -> list[tuple[int, int]]:
    """The same-budget row: ``(h, BUDGET_D_MODEL // h)`` for h in ``BUDGET_H``."""
    return [(h, BUDGET_D_MODEL // h) for h in BUDGET_H]


def tiny_cells() -> list[tuple[int, int]]:
    """Every ``(h, d_k)`` with a trained model (and its untrained twin): the
    grid and the same-budget row, sorted, each once."""
    return sorted(set(grid_cells()) | set(budget_cells()))


def assets_dir() -> Path:
    """``assets/`` of the course repository (or ``$MHACOURSE_ASSETS``)."""
    env = os.environ.get("MHACOURSE_ASSETS")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "assets"
    if not (path / "models").is_dir():
        raise InputError(
            f"the trained models are not at {path / 'models'}: run "
            "`python scripts/train_tiny_models.py` in the course repository, or "
            "set MHACOURSE_ASSETS to the repository's assets/ folder.")
    return path


def models_dir() -> Path:
    """``assets/models/``: the tiny models, ``metrics.json`` and the sweep."""
    return assets_dir() / "models"


def check_cell(h, d_k, trained) -> None:
    check_positive_int("h", h)
    check_positive_int("d_k", d_k)
    check_bool("trained", trained)


def tiny_model_path(h: int, d_k: int, trained: bool) -> Path:
    """Where the tiny model for (h, d_k) is stored:
    ``assets/models/<name>.safetensors``, the name from :func:`model_name`."""
    check_cell(h, d_k, trained)
    return models_dir() / f"{model_name(h, d_k, trained)}.safetensors"
