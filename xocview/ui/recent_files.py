"""The Open Recent menu: the last files opened or saved, kept in the settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings
from PySide6.QtWidgets import QMenu

from xocview.ui.actions import add_action

__all__ = ["MAX_RECENT", "RecentFiles"]

MAX_RECENT = 10


class RecentFiles:
    """Remembers paths in ``settings`` and lists them in ``menu``; a click calls ``open_path``."""

    def __init__(
        self,
        parent: QObject,
        settings: QSettings,
        menu: QMenu,
        open_path: Callable[[Path], object],
    ) -> None:
        self.parent, self.settings, self.menu, self.open_path = parent, settings, menu, open_path
        self.fill()

    def remember(self, path: Path) -> None:
        recent = [str(path.resolve())] + [p for p in self.paths() if p != str(path.resolve())]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self.settings.setValue("last_dir", str(path.resolve().parent))
        self.fill()

    def paths(self) -> list[str]:
        value = self.settings.value("recent", [])
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value] if isinstance(value, list) else []

    def fill(self) -> None:
        self.menu.clear()
        for name in self.paths():
            add_action(
                self.parent, self.menu, name, lambda _=False, n=name: self.open_path(Path(n))
            )
        self.menu.setEnabled(bool(self.paths()))
