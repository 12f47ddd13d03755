"""Why heads work: each head read as two low-rank matrices, and the scores
that tie heads together (Elhage et al. 2021, "A Mathematical Framework for
Transformer Circuits"; Olsson et al. 2022, "In-context Learning and
Induction Heads"), on the tiny models of :mod:`mhacourse.tiny_model`.

- :mod:`~mhacourse.circuits.matrices` — :func:`qk_matrix`, :func:`ov_matrix`,
  :func:`singular_values`, :func:`rank`, :func:`positional_scores`,
  :func:`band_score`, :func:`full_ov_circuit`, :func:`copying_score`,
  :func:`copying_proxy`
- :mod:`~mhacourse.circuits.scores` — :func:`composition_score`,
  :func:`composition_scores`, :func:`composition_baseline`,
  :func:`composition_max_baseline`,
  :func:`repeated_sequences`, :func:`prefix_matching_scores`,
  :func:`read_circuits`
- :mod:`~mhacourse.circuits.core` — ``_circuits_core``, every read-out
  from the heads' low-rank factors, unchecked and traceable (the page
  exports it; :func:`read_circuits` is its checked form)

Chapter 11 ("How heads form, and why they work") teaches them.
"""
from .core import KINDS
from .matrices import (
    RANK_TOL,
    band_score,
    copying_proxy,
    copying_score,
    full_ov_circuit,
    ov_matrix,
    positional_scores,
    qk_matrix,
    rank,
    singular_values,
)
from .scores import (
    GRAPH_READOUTS,
    READOUTS,
    composition_baseline,
    composition_max_baseline,
    composition_score,
    composition_scores,
    prefix_matching_scores,
    read_circuits,
    repeated_sequences,
)

__all__ = [
    "qk_matrix", "ov_matrix", "singular_values", "rank", "RANK_TOL",
    "positional_scores", "band_score", "full_ov_circuit", "copying_score",
    "copying_proxy", "composition_score", "composition_scores",
    "composition_baseline", "composition_max_baseline", "repeated_sequences",
    "prefix_matching_scores", "read_circuits", "READOUTS", "GRAPH_READOUTS", "KINDS",
]
