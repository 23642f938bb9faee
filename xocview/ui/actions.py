"""The main window's menus and actions: File, Edit, View, Run (filled by the run controller), Help.

The window is handed in as what it is (a QMainWindow that parents the actions) and as what the
actions call (``MenuHost``), so this module never imports the window.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup, QKeySequence, QUndoGroup
from PySide6.QtWidgets import QMainWindow, QMenu, QTabWidget

__all__ = ["MenuHost", "Menus", "add_action", "make_menus"]


class MenuHost(Protocol):
    """What the menus' actions call on the window."""

    tabs: QTabWidget
    undo_group: QUndoGroup
    theme_choice: str

    def open_dialog(self) -> None: ...
    def reload(self) -> None: ...
    def save(self, save_as: bool = False) -> bool: ...
    def export_dialog(self, suffix: str) -> None: ...
    def import_times(self) -> None: ...
    def compare_with(self) -> None: ...
    def close_tab(self, index: int) -> bool: ...
    def close(self) -> bool: ...
    def show_search(self) -> None: ...
    def view_do(self, name: str, *args: object) -> None: ...
    def doc_do(self, name: str, *args: object) -> None: ...
    def set_theme(self, choice: str) -> None: ...
    def set_show_names(self, on: bool) -> None: ...
    def show_shortcuts(self) -> None: ...
    def show_about(self) -> None: ...


@dataclass(frozen=True)
class Menus:
    """The menus and actions that others fill or read after the menus are made."""

    recent: QMenu  # Open Recent, filled by RecentFiles
    run: QMenu  # filled by the RunController
    weights: QAction  # View > Weights as Nodes
    time_from: QMenu  # View > Time From: filled by the RunController with the timed engines
    metrics: QMenu  # View > Colour by Metric: filled with the named metrics a graph stores
    panels: QMenu  # View > Panels: each dock's show/hide toggle, added by the window
    view: QMenu  # View, for the canvas overlays' toggles the window adds
    names: QAction  # View > Show Names, checked by the window from its settings


def add_action(
    parent: QObject,
    menu: QMenu,
    text: str,
    slot: Callable[..., object],
    shortcut: str | QKeySequence.StandardKey | None = None,
    checkable: bool = False,
) -> QAction:
    """An action owned by ``parent`` that calls ``slot``, added to ``menu``.

    A standard key takes every binding the platform gives it (Close is Ctrl+W and Ctrl+F4 on
    Linux), not only the first one.
    """
    act = QAction(text, parent)
    if isinstance(shortcut, QKeySequence.StandardKey):
        act.setShortcuts(shortcut)
    elif shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
    act.setCheckable(checkable)
    act.triggered.connect(slot)
    menu.addAction(act)
    return act


def make_menus(window: QMainWindow, host: MenuHost) -> Menus:
    """Fill ``window``'s menu bar; the actions call ``host`` (the same window)."""
    mb = window.menuBar()
    recent = _file_menu(window, host, mb.addMenu("&File"))
    _edit_menu(window, host, mb.addMenu("&Edit"))
    view = mb.addMenu("&View")
    weights, names, time_from, metrics = _view_menu(window, host, view)
    view.addSeparator()
    panels = view.addMenu("&Panels")
    run = mb.addMenu("&Run")
    h = mb.addMenu("&Help")
    add_action(
        window, h, "&Keyboard Shortcuts", host.show_shortcuts, QKeySequence.StandardKey.HelpContents
    )
    add_action(window, h, "&About xocview", host.show_about)
    return Menus(recent, run, weights, time_from, metrics, panels, view, names)


def _file_menu(window: QMainWindow, host: MenuHost, f: QMenu) -> QMenu:
    add_action(window, f, "&Open...", host.open_dialog, QKeySequence.StandardKey.Open)
    recent = f.addMenu("Open &Recent")
    # Not the standard Refresh key: that is F5, which runs the graph (Run > Run Graph).
    add_action(window, f, "&Reload", host.reload, "Ctrl+R")
    add_action(window, f, "&Save", host.save, QKeySequence.StandardKey.Save)
    add_action(
        window, f, "Save &As...", lambda: host.save(save_as=True), QKeySequence.StandardKey.SaveAs
    )
    add_action(window, f, "&Import Times...", host.import_times, "Ctrl+I")
    add_action(window, f, "Compare &With...", host.compare_with, "Ctrl+Shift+D")
    add_action(window, f, "Export Image (PNG)...", lambda: host.export_dialog(".png"), "Ctrl+E")
    add_action(
        window, f, "Export Image (SVG)...", lambda: host.export_dialog(".svg"), "Ctrl+Shift+E"
    )
    add_action(
        window,
        f,
        "&Close Tab",
        lambda: host.close_tab(host.tabs.currentIndex()),
        QKeySequence.StandardKey.Close,
    )
    f.addSeparator()
    add_action(window, f, "&Quit", host.close, QKeySequence.StandardKey.Quit)
    return recent


def _edit_menu(window: QMainWindow, host: MenuHost, e: QMenu) -> None:
    undo = host.undo_group.createUndoAction(window, "&Undo")
    undo.setShortcuts(QKeySequence.StandardKey.Undo)
    redo = host.undo_group.createRedoAction(window, "&Redo")
    keys = QKeySequence.keyBindings(QKeySequence.StandardKey.Redo)
    shift_z = QKeySequence("Ctrl+Shift+Z")  # everywhere, whatever the platform's Redo is
    redo.setShortcuts([shift_z, *(k for k in keys if k != shift_z)])
    e.addAction(undo)
    e.addAction(redo)


def _view_menu(
    window: QMainWindow, host: MenuHost, v: QMenu
) -> tuple[QAction, QAction, QMenu, QMenu]:
    add_action(window, v, "&Find...", host.show_search, QKeySequence.StandardKey.Find)
    v.addSeparator()
    add_action(
        window,
        v,
        "Zoom &In",
        lambda: host.view_do("zoom_by", 1.25),
        QKeySequence.StandardKey.ZoomIn,
    )
    add_action(
        window,
        v,
        "Zoom &Out",
        lambda: host.view_do("zoom_by", 0.8),
        QKeySequence.StandardKey.ZoomOut,
    )
    add_action(window, v, "&Fit", lambda: host.view_do("fit"), "Ctrl+0")
    add_action(window, v, "&Actual Size", lambda: host.view_do("zoom_to", 1.0), "Ctrl+1")
    v.addSeparator()
    add_action(window, v, "&Expand All", lambda: host.doc_do("set_level", None), "Ctrl+Shift+X")
    add_action(window, v, "&Collapse All", lambda: host.doc_do("set_level", 0), "Ctrl+Shift+C")
    levels = v.addMenu("Collapse to &Level")
    for n in range(1, 6):
        add_action(
            window,
            levels,
            f"Level {n}",
            lambda _=False, n=n: host.doc_do("set_level", n),
            f"Ctrl+Alt+{n}",
        )
    v.addSeparator()
    group = QActionGroup(window)
    tb = add_action(
        window,
        v,
        "Top to Bottom",
        lambda: host.doc_do("set_direction", "TB"),
        "Ctrl+Shift+T",
        checkable=True,
    )
    lr = add_action(
        window,
        v,
        "Left to Right",
        lambda: host.doc_do("set_direction", "LR"),
        "Ctrl+Shift+L",
        checkable=True,
    )
    group.addAction(tb)
    group.addAction(lr)
    tb.setChecked(True)
    weights = add_action(
        window,
        v,
        "Weights as Nodes",
        lambda on: host.doc_do("set_show_weights", bool(on)),
        "Ctrl+Shift+W",
        checkable=True,
    )
    weights.setChecked(False)  # weights folded into their consumers, as Netron draws them
    names = add_action(  # Netron's Show Names: each node's name on its box, under its op
        window,
        v,
        "Show &Names",
        lambda on: host.set_show_names(bool(on)),
        "Ctrl+U",
        checkable=True,
    )
    time_from = v.addMenu("&Time From")  # shown when a graph has times of two engines or more
    time_from.menuAction().setVisible(False)
    metrics = v.addMenu("Colour by &Metric")  # shown when a graph stores named metrics
    metrics.menuAction().setVisible(False)
    v.addSeparator()
    themes = QActionGroup(window)
    for name, key in (
        ("light", "Ctrl+Shift+1"),
        ("dark", "Ctrl+Shift+2"),
        ("system", "Ctrl+Shift+3"),
    ):
        act = add_action(
            window,
            v,
            f"{name.title()} Theme",
            lambda _=False, n=name: host.set_theme(n),
            key,
            checkable=True,
        )
        themes.addAction(act)
        act.setChecked(name == host.theme_choice)
    return weights, names, time_from, metrics
