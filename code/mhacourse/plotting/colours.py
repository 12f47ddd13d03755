"""Colours shared by the pictures: the colour map of every heatmap, one
Okabe–Ito colour per head, and the text colour that reads on a fill.

Colour map: ``viridis`` (perceptually uniform, readable with the common
colour-vision deficiencies and in greyscale).
"""
from __future__ import annotations

from ._checks import check_hex_colour

CMAP = "viridis"

# Okabe–Ito colours, one per head (up to 8), for pictures coloured by head.
HEAD_COLORS = ["#e69f00", "#56b4e9", "#009e73", "#f0e442",
               "#0072b2", "#d55e00", "#cc79a7", "#999999"]


def text_colour(hex_colour: str) -> str:
    """Black or white, whichever has the higher WCAG contrast on ``hex_colour``."""
    check_hex_colour(hex_colour)

    def lin(v):
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"
