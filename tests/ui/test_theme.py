"""The theme reaches the whole window: menus, docks, tables and dialogs, not the canvas alone."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QDockWidget, QMenu

from xocview.ui.palette import dark_palette


def _contrast(a: QColor, b: QColor) -> float:
    def lum(c: QColor) -> float:
        def lin(v: float) -> float:
            return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * lin(c.redF()) + 0.7152 * lin(c.greenF()) + 0.0722 * lin(c.blueF())

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_dark_darkens_menus_docks_and_tables_and_light_brings_them_back(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    light_window = QApplication.palette().color(QPalette.ColorRole.Window)
    window.set_theme("dark")
    QApplication.processEvents()  # widgets take an application palette from an event
    menu = window.menuBar().findChildren(QMenu)[0]
    dock = window.findChildren(QDockWidget)[0]
    for widget in (window, menu, dock, dock.widget()):
        bg = widget.palette().color(QPalette.ColorRole.Window)
        assert bg.lightness() < 80, (widget, bg.name())
        text = widget.palette().color(QPalette.ColorRole.WindowText)
        assert _contrast(bg, text) >= 7.0
    window.set_theme("light")
    QApplication.processEvents()
    assert QApplication.palette().color(QPalette.ColorRole.Window) == light_window
    assert window.palette().color(QPalette.ColorRole.Window).lightness() > 150


def test_the_dark_palette_reads_well() -> None:
    p = dark_palette()
    for bg_role, fg_role in (
        (QPalette.ColorRole.Window, QPalette.ColorRole.WindowText),
        (QPalette.ColorRole.Base, QPalette.ColorRole.Text),
        (QPalette.ColorRole.Button, QPalette.ColorRole.ButtonText),
        (QPalette.ColorRole.Highlight, QPalette.ColorRole.HighlightedText),
    ):
        assert _contrast(p.color(bg_role), p.color(fg_role)) >= 4.5, (bg_role, fg_role)
