"""The whole window in the chosen theme: Qt's palette for menus, docks, dialogs and tables.

The canvas has its own colours (canvas/style.py); without this the dark theme darkened only
the canvas and left every other widget light. Dark uses the Fusion style, whose widgets draw
from the palette on every platform; light puts back the style and palette the app started with.
"""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

__all__ = ["apply_palette", "dark_palette"]

_started_with: tuple[str, QPalette] | None = None

# (role, active colour, disabled colour or None)
_DARK: list[tuple[QPalette.ColorRole, str, str | None]] = [
    (QPalette.ColorRole.Window, "#2b2d30", None),
    (QPalette.ColorRole.WindowText, "#dfe1e5", "#7a7e85"),
    (QPalette.ColorRole.Base, "#1e1f22", "#2b2d30"),
    (QPalette.ColorRole.AlternateBase, "#26282b", None),
    (QPalette.ColorRole.ToolTipBase, "#3c3f41", None),
    (QPalette.ColorRole.ToolTipText, "#dfe1e5", None),
    (QPalette.ColorRole.PlaceholderText, "#8c9097", None),
    (QPalette.ColorRole.Text, "#dfe1e5", "#7a7e85"),
    (QPalette.ColorRole.Button, "#3c3f41", None),
    (QPalette.ColorRole.ButtonText, "#dfe1e5", "#7a7e85"),
    (QPalette.ColorRole.BrightText, "#ff6b68", None),
    (QPalette.ColorRole.Light, "#4a4d50", None),
    (QPalette.ColorRole.Midlight, "#404346", None),
    (QPalette.ColorRole.Mid, "#35383b", None),
    (QPalette.ColorRole.Dark, "#1a1b1d", None),
    (QPalette.ColorRole.Shadow, "#0f0f10", None),
    (QPalette.ColorRole.Highlight, "#2f65ca", "#3c3f41"),
    (QPalette.ColorRole.HighlightedText, "#ffffff", "#7a7e85"),
    (QPalette.ColorRole.Link, "#6ca0f6", None),
    (QPalette.ColorRole.LinkVisited, "#b08cf0", None),
]


def dark_palette() -> QPalette:
    """A dark palette whose text reads at 10:1 or better on its window and base colours."""
    palette = QPalette()
    for role, colour, disabled in _DARK:
        palette.setColor(QPalette.ColorGroup.Active, role, QColor(colour))
        palette.setColor(QPalette.ColorGroup.Inactive, role, QColor(colour))
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(disabled or colour))
    return palette


def apply_palette(name: str) -> None:
    """Give every widget of the application the ``"light"`` or ``"dark"`` theme."""
    global _started_with
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    if _started_with is None:
        _started_with = (app.style().name(), QPalette(app.palette()))
    style, palette = _started_with
    if name == "dark":
        if app.style().name().lower() != "fusion":
            app.setStyle(QStyleFactory.create("Fusion"))
        app.setPalette(dark_palette())
    else:
        if app.style().name() != style:
            app.setStyle(QStyleFactory.create(style))
        app.setPalette(palette)
