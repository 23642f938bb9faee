"""Titles on heat colours stay readable in every theme (issue 16: white on pale yellow)."""

from __future__ import annotations

import numpy as np

from xocview.ui.canvas.heat import LEVELS, light_text, text_contrast


def test_every_heat_level_gets_the_title_colour_with_more_contrast() -> None:
    contrast = text_contrast()
    assert contrast.shape == (LEVELS,)
    # WCAG asks 3:1 of bold titles; the crossover between white and ink is the worst, ~4.3:1.
    assert contrast.min() >= 4.0


def test_the_hot_end_takes_ink_and_the_cold_end_white() -> None:
    white = light_text()
    assert white[0] and not white[-1]  # dark violet -> white; pale yellow -> ink
    assert np.all(np.diff(white.astype(int)) <= 0)  # one crossover: lightness is ordered
