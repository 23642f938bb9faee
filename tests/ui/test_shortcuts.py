"""Every key does one thing: no key sequence is bound twice where both could fire, F5 runs the
graph, Ctrl+R reloads, and the canvas has the keyboard as soon as a file opens."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import ClassVar

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QAction, QContextMenuEvent, QKeySequence
from PySide6.QtWidgets import QApplication, QMenu, QWidget

from tests.conftest import REPO
from tests.ui.test_viewer import item_of, open_file
from xocview.ui.canvas.view import GraphView

SAMPLES = REPO / "sample_graphs"
# What the canvas does with bare keys in keyPressEvent: an action bound to one of them would
# take the key before the canvas sees it.
CANVAS_KEYS = ["0", "F", "+", "=", "-", "Up", "Down", "Left", "Right", "Esc", "Del", "Backspace"]
WIDGET_CONTEXTS = (
    Qt.ShortcutContext.WidgetShortcut,
    Qt.ShortcutContext.WidgetWithChildrenShortcut,
)


def _menu_actions(menu: QMenu) -> list[QAction]:
    """A menu's actions and those of its sub-menus, however deep."""
    found = []
    for act in menu.actions():
        found.append(act)
        if act.menu() is not None:
            found.extend(_menu_actions(act.menu()))
    return found


class CaughtMenu(QMenu):
    """A context menu that records its actions instead of showing itself."""

    caught: ClassVar[list[QAction]] = []

    def exec(self, *_args: object) -> None:  # type: ignore[override]
        CaughtMenu.caught.extend(_menu_actions(self))


def _context_menu_actions(monkeypatch, view: GraphView, pos: QPoint) -> list[QAction]:  # type: ignore[no-untyped-def]
    """The actions of the canvas's context menu at ``pos`` (the menu is caught, not shown)."""
    CaughtMenu.caught = []
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, view.viewport().mapToGlobal(pos))
    with monkeypatch.context() as m:
        m.setattr("xocview.ui.canvas.edit_menu.QMenu", CaughtMenu)
        view.contextMenuEvent(event)
    return CaughtMenu.caught


def all_actions(window, monkeypatch) -> list[QAction]:  # type: ignore[no-untyped-def]
    """Every action a user can reach: menus and sub-menus, the window's and its children's
    actions, the canvas's, and the canvas's context menus (on a node and on empty space)."""
    found: list[QAction] = list(window.findChildren(QAction))
    found += window.actions()
    for act in window.menuBar().actions():
        found.append(act)
        if act.menu() is not None:
            found += _menu_actions(act.menu())
    for widget in window.findChildren(QWidget):
        found += widget.actions()
    view = window.tabs.currentWidget()
    if isinstance(view, GraphView):
        found += view.actions()
        k = item_of(view, view.doc.graph.nodes[0].id)
        d = view.doc.drawing
        view.centerOn(QPointF(d.x[k], d.y[k]))
        node_pos = view.mapFromScene(QPointF(d.x[k], d.y[k]))
        found += _context_menu_actions(monkeypatch, view, node_pos)
        found += _context_menu_actions(monkeypatch, view, QPoint(2, 2))
    unique: dict[int, QAction] = {}
    for act in found:
        unique.setdefault(id(act), act)
    return list(unique.values())


def clashes(actions: list[QAction]) -> list[str]:
    """Key sequences bound to two actions that can fire at the same time.

    Window and application shortcuts all live in the one main window; two widget shortcuts
    clash only when they belong to the same widget.
    """
    bound: dict[str, list[tuple[QAction, frozenset[int] | None]]] = defaultdict(list)
    for act in actions:
        scope = None
        if act.shortcutContext() in WIDGET_CONTEXTS:
            scope = frozenset(id(w) for w in act.associatedObjects())
        for seq in {s.toString(QKeySequence.SequenceFormat.PortableText) for s in act.shortcuts()}:
            if seq:
                bound[seq].append((act, scope))
    found = []
    for seq, owners in sorted(bound.items()):
        for i, (a, sa) in enumerate(owners):
            for b, sb in owners[i + 1 :]:
                if sa is None or sb is None or sa & sb:
                    found.append(f"{seq}: {a.text()!r} and {b.text()!r}")
    return found


def test_no_key_sequence_is_bound_twice(qtbot, window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    open_file(qtbot, window, SAMPLES / "simple_model.json")
    actions = all_actions(window, monkeypatch)
    texts = {a.text().replace("&", "") for a in actions}
    assert {"Run Graph...", "Reload", "Undo", "Fit", "Level 3", "Delete Node"} <= texts
    assert clashes(actions) == []
    window_keys = {
        s.toString(QKeySequence.SequenceFormat.PortableText)
        for a in actions
        if a.shortcutContext() not in WIDGET_CONTEXTS
        for s in a.shortcuts()
    }
    assert window_keys.isdisjoint(CANVAS_KEYS)


def test_the_check_finds_a_clash() -> None:
    run, reload = QAction("Run"), QAction("Reload")
    run.setShortcut("F5")
    reload.setShortcuts(QKeySequence.StandardKey.Refresh)  # F5 on every platform
    assert clashes([run, reload]) == ["F5: 'Run' and 'Reload'"]


def _shortcut(window, text: str) -> list[str]:  # type: ignore[no-untyped-def]
    acts = [a for a in window.findChildren(QAction) if a.text().replace("&", "") == text]
    assert len(acts) == 1, text
    return [s.toString(QKeySequence.SequenceFormat.PortableText) for s in acts[0].shortcuts()]


def test_f5_runs_and_ctrl_r_reloads(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    assert _shortcut(window, "Run Graph...") == ["F5"]
    assert _shortcut(window, "Reload") == ["Ctrl+R"]
    assert "Ctrl+W" in _shortcut(window, "Close Tab")  # all the platform's Close keys


def test_pressing_f5_starts_a_run(qtbot, window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    open_file(qtbot, window, SAMPLES / "simple_model.json")
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    asked = []
    monkeypatch.setattr(window.runner, "ask", lambda parent, doc: asked.append(doc))  # cancels
    qtbot.keyClick(window, Qt.Key.Key_F5)
    assert len(asked) == 1 and asked[0] is window.tabs.currentWidget().doc


def test_ctrl_r_reloads_the_file(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "simple_model.json")
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: window.tabs.count() == 1 and window.tabs.currentWidget() is not view)


def test_the_canvas_has_the_keyboard_after_opening(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    view = open_file(qtbot, window, SAMPLES / "tiny_transformer.json")
    view.fit()
    fitted = view.transform()
    view.zoom_by(3.0)
    assert view.transform() != fitted
    # typed into the window, as a user does: the key goes wherever the focus is
    qtbot.keyClick(window.windowHandle(), Qt.Key.Key_0)
    assert view.hasFocus()
    assert view.transform() == fitted


def test_switching_tabs_gives_the_keyboard_to_that_canvas(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    first = open_file(qtbot, window, SAMPLES / "tiny_transformer.json")
    open_file(qtbot, window, SAMPLES / "simple_model.json")
    window.search.setFocus()  # the focus elsewhere, as after a search
    window.tabs.setCurrentWidget(first)
    assert first.hasFocus()
    first.fit()
    fitted = first.transform()
    first.zoom_by(0.5)
    qtbot.keyClick(window.windowHandle(), Qt.Key.Key_0)
    assert first.transform() == fitted


@pytest.fixture(autouse=True)
def _no_run_threads(window):  # type: ignore[no-untyped-def]
    yield
    window.runner.stop()
