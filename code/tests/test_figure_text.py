"""mhacourse.plotting.figure_text: the smallest text size a figure's PNG records."""
import io

import matplotlib.pyplot as plt
import pytest

from mhacourse.plotting.figure_text import (
    min_text_px,
    png_min_text_px,
    png_text_entries,
    png_with_text_size,
)


def test_smallest_text_is_fontsize_times_dpi_over_72():
    fig, ax = plt.subplots(figsize=(3, 2), dpi=100)
    ax.plot([0, 1])
    ax.set_title("title", fontsize=14)
    ax.set_xlabel("x", fontsize=7)                   # the smallest
    assert min_text_px(fig) == pytest.approx(7 * 100 / 72)
    assert min_text_px(fig, dpi=200) == pytest.approx(7 * 200 / 72)
    plt.close(fig)


def test_tick_labels_count_and_hidden_text_does_not():
    fig, ax = plt.subplots(dpi=100)
    ax.plot([0, 1])
    ax.tick_params(labelsize=6)                      # tick labels get text at draw time
    ax.text(0.5, 0.5, "hidden", fontsize=3, visible=False)
    ax.text(0.5, 0.5, "   ", fontsize=2)             # blank text draws nothing
    assert min_text_px(fig) == pytest.approx(6 * 100 / 72)
    plt.close(fig)


def test_a_figure_without_text_records_none():
    fig, ax = plt.subplots()
    ax.imshow([[0, 1], [1, 0]])
    ax.axis("off")                                   # its tick labels are not drawn
    png = png_with_text_size(fig)
    assert png_min_text_px(png) is None
    plt.close(fig)


def test_png_carries_the_entry_and_a_plain_png_does_not():
    fig, ax = plt.subplots(dpi=80)
    ax.set_xlabel("x", fontsize=9)
    ax.tick_params(labelsize=12)
    assert png_min_text_px(png_with_text_size(fig)) == pytest.approx(9 * 80 / 72, abs=0.01)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert "mhacourse:min-text-px" not in png_text_entries(buf.getvalue())
    with pytest.raises(KeyError):
        png_min_text_px(buf.getvalue())
    with pytest.raises(ValueError, match="not a PNG"):
        png_text_entries(b"GIF89a")
    plt.close(fig)
