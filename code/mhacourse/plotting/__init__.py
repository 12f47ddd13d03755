"""Pictures of attention, one module per kind of picture. Imports the math,
never the widgets.

- :mod:`~mhacourse.plotting.colours` — the colour map, one colour per head,
  text colour on a fill
- :mod:`~mhacourse.plotting.heatmaps` — attention heatmaps, their text
  alternative, figures as PNG and HTML (chapters 1, 3, 6, 12, 14, 15)
- :mod:`~mhacourse.plotting.head_split` — heads as blocks of columns or
  rows (chapters 2, 5, 6)
- :mod:`~mhacourse.plotting.layer_head_grids` — a model's heads as a
  layers x heads grid (chapter 4)
- :mod:`~mhacourse.plotting.charts` — benchmark ratios, accuracy against h
  (chapters 8, 9)
- :mod:`~mhacourse.plotting.diagrams` — the transformer block, GQA's shared
  key/value heads (chapters 10, 12)

Colour map: ``viridis`` (perceptually uniform, readable with the common
colour-vision deficiencies and in greyscale). Every heatmap has a text
alternative: :func:`top_attended`. Chapters import from here
(``from mhacourse.plotting import attention_heatmap``).
"""
from .charts import PART_STYLE, RATIO_COLOURS, RATIO_HATCHES, accuracy_vs_heads, ratio_bars
from .colours import CMAP, HEAD_COLORS, PART_COLOURS, PHASE_COLOUR, text_colour
from .diagrams import block_diagram, kv_sharing_diagram
from .head_split import head_blocks, head_split_figure, head_split_html
from .heatmaps import attention_heatmap, figure_png, heads_grid, png_html, top_attended
from .layer_head_grids import (
    GRID_FONT,
    HEAD_CLASS_STYLE,
    head_class_grid,
    head_grid_text,
    head_value_grid,
)

__all__ = [
    "CMAP", "HEAD_COLORS", "PART_COLOURS", "PHASE_COLOUR", "text_colour",
    "attention_heatmap", "heads_grid", "top_attended", "figure_png", "png_html",
    "head_split_figure", "head_split_html", "head_blocks",
    "GRID_FONT", "HEAD_CLASS_STYLE", "head_class_grid", "head_value_grid",
    "head_grid_text",
    "RATIO_COLOURS", "RATIO_HATCHES", "ratio_bars", "PART_STYLE", "accuracy_vs_heads",
    "block_diagram", "kv_sharing_diagram",
]
