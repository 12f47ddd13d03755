"""Colours shared by the pictures: the colour map of every heatmap, one
Okabe–Ito colour per head, one per part of the tiny models' task, and the
text colour that reads on a fill.

Colour map: ``viridis`` (perceptually uniform, readable with the common
colour-vision deficiencies and in greyscale).
"""
from __future__ import annotations

from ._checks import check_hex_colour

CMAP = "viridis"

# Okabe–Ito colours, one per head (up to 8), for pictures coloured by head.
HEAD_COLORS = ["#e69f00", "#56b4e9", "#009e73", "#f0e442",
               "#0072b2", "#d55e00", "#cc79a7", "#999999"]

# The colour of each part of the tiny models' task, in every picture of a
# training run: the chapters' figures, their slides and the explorer's live
# trainer (assets/site/explorer/trainer-charts.js draws its curves in the same
# colours; tests/test_slides.py checks that the two agree), so that "the blue
# curve" means one thing in a lecture. PHASE_COLOUR marks the phase change.
PART_COLOURS = {"overall": "#0072b2", "previous": "#e69f00", "lookup": "#009e73"}
PHASE_COLOUR = "#cc79a7"


def text_colour(hex_colour: str) -> str:
    """Black or white, whichever has the higher WCAG contrast on ``hex_colour``."""
    check_hex_colour(hex_colour)

    def lin(v):
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"
