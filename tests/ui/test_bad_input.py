"""The window with bad input: many broken files at once, special files, huge labels, bugs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication, QImage
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from tests.conftest import REPO
from tests.ui.test_single_instance import send_from_process
from xocview.formats import source as source_module
from xocview.ui import document, load_process, workers
from xocview.ui.app import attach, open_files, report_unexpected
from xocview.ui.canvas.drawing import LABEL_CHARS
from xocview.ui.canvas.view import GraphView

SAMPLES = REPO / "sample_graphs"
HUGE = 10**6


def broken_files(folder: Path) -> list[Path]:
    """Ten files that cannot be opened, each for a reason of its own."""
    folder.mkdir()
    files = {
        "truncated.json": '{"id": "g", "nodes": [',
        "empty.json": "",
        "not_a_graph.json": '{"hello": "world"}',
        "list.json": "[1, 2, 3]",
        "deep.json": "[" * 5000 + "]" * 5000,
        "bad_utf8.json": b'{"id": "\xff\xfe"}',
        "junk.onnx": b"\x0a\xff\xff\xff\xff\x0f" + bytes(range(256)),
        "text.onnx": "this is not a protobuf",
        "bad_index.json": json.dumps(
            {
                "id": "g",
                "name": "g",
                "tensors": [],
                "nodes": [{"id": "n", "name": "Relu", "inputs": [7], "outputs": [9]}],
                "inputs": [],
                "outputs": [],
                "metadata": {},
            }
        ),
    }
    paths = []
    for name, content in files.items():
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        paths.append(path)
    paths.append(folder / "missing.json")
    return paths


def good_files(folder: Path) -> list[Path]:
    out = [folder / "simple_model.json", folder / "tiny_transformer.json"]
    for path in out:
        shutil.copy(SAMPLES / path.name, path)
    return out


def blocking_boxes() -> list[str]:
    """Titles of the visible message boxes and the modal widget, if any."""
    boxes = [
        w.windowTitle()
        for w in QApplication.topLevelWidgets()
        if isinstance(w, QMessageBox) and w.isVisible()
    ]
    modal = QApplication.activeModalWidget()
    return boxes + ([f"modal: {modal.windowTitle()}"] if modal is not None else [])


def assert_one_list(window, broken: list[Path]) -> None:  # type: ignore[no-untyped-def]
    failures = window.open_failures
    assert failures.isVisible()
    assert len(failures.messages) == len(broken)
    shown = failures.text.toPlainText().splitlines()
    assert shown == failures.messages
    for path in broken:  # each line names its file first: file: place: problem
        assert sum(line.startswith(str(path) + ":") for line in shown) == 1, path
    assert all("Traceback" not in line for line in shown)
    assert f"{len(broken)} files could not be opened" in failures.heading.text()
    assert blocking_boxes() == []


def test_ten_broken_and_two_good_files_give_two_tabs_and_one_list(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    broken = broken_files(tmp_path / "broken")
    good = good_files(tmp_path)

    open_files(window, [*broken[:5], good[0], *broken[5:], good[1]])

    qtbot.waitUntil(lambda: not window.jobs, timeout=60000)
    assert window.tabs.count() == 2
    assert {window.tabs.tabToolTip(k) for k in range(2)} == {str(p) for p in good}
    assert len(window.errors) == len(broken)
    assert_one_list(window, broken)
    # the window is still usable: another open request starts a new list once this one closes
    window.open_failures.close()
    window.open_paths([broken[0]])
    qtbot.waitUntil(lambda: not window.jobs, timeout=20000)
    assert len(window.open_failures.messages) == 1
    assert "This file could not be opened" in window.open_failures.heading.text()


def test_dropping_many_files_lists_the_failures_together(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    broken = broken_files(tmp_path / "broken")
    good = good_files(tmp_path)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in [*broken, *good]])
    drop = QDropEvent(
        QPointF(100, 100),
        Qt.DropAction.CopyAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )

    window.dropEvent(drop)

    qtbot.waitUntil(lambda: not window.jobs, timeout=60000)
    assert window.tabs.count() == 2
    assert_one_list(window, broken)


def test_file_open_with_many_files_lists_the_failures_together(
    qtbot, window, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    broken = broken_files(tmp_path / "broken")
    good = good_files(tmp_path)
    chosen = [str(p) for p in [*good, *broken]]
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: (chosen, ""))

    window.open_dialog()

    qtbot.waitUntil(lambda: not window.jobs, timeout=60000)
    assert window.tabs.count() == 2
    assert_one_list(window, broken)


def test_files_sent_to_the_running_instance_list_the_failures_together(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    name = f"xocview-test-{uuid.uuid4().hex[:12]}"
    app = QApplication.instance()
    attach(window, app, name)
    broken = broken_files(tmp_path / "broken")
    good = good_files(tmp_path)

    sender = send_from_process(name, [*broken, *good])

    qtbot.waitUntil(lambda: sender.poll() is not None, timeout=30000)
    assert sender.returncode == 0
    qtbot.waitUntil(lambda: window.tabs.count() == 2 and not window.jobs, timeout=60000)
    qtbot.waitUntil(lambda: len(window.errors) == len(broken), timeout=20000)
    assert_one_list(window, broken)


# -- one read per open ---------------------------------------------------------------------


def tiny_onnx(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    onnx.save(helper.make_model(graph), str(path))
    return path


@pytest.mark.parametrize("kind", ["onnx", "json"])
def test_a_file_is_read_once_when_opened(
    qtbot, window, tmp_path: Path, monkeypatch, kind: str
) -> None:  # type: ignore[no-untyped-def]
    if kind == "onnx":
        path = tiny_onnx(tmp_path / "model.onnx")
    else:
        path = tmp_path / "model.json"
        shutil.copy(SAMPLES / "tiny_transformer.json", path)
    reads: list[str] = []
    real_read = source_module.read_regular_file
    real_open = os.open
    real_bytes = Path.read_bytes
    real_builtin_open = open

    def count_read(p, *a, **k):  # type: ignore[no-untyped-def]
        reads.append("read_regular_file")
        return real_read(p, *a, **k)

    def count_os_open(p, *a, **k):  # type: ignore[no-untyped-def]
        if Path(os.fsdecode(p)) == path:
            reads.append("os.open")
        return real_open(p, *a, **k)

    def count_bytes(self):  # type: ignore[no-untyped-def]
        if self == path:
            reads.append("read_bytes")
        return real_bytes(self)

    def count_open(p, *a, **k):  # type: ignore[no-untyped-def]
        if isinstance(p, (str, Path)) and Path(p) == path:
            reads.append("open")
        return real_builtin_open(p, *a, **k)

    monkeypatch.setattr(source_module, "read_regular_file", count_read)
    monkeypatch.setattr(os, "open", count_os_open)
    monkeypatch.setattr(Path, "read_bytes", count_bytes)
    monkeypatch.setattr("builtins.open", count_open)

    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1 and not window.jobs, timeout=30000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    view.doc.select_node(0)  # the panes follow the loaded graph, not the file
    view.doc.clear_selection()

    # first the 64-byte look that chooses where to read; an ONNX file is read by a child
    # process (its reads are counted below, where the child's work runs in this process)
    assert reads == (["os.open"] if kind == "onnx" else ["os.open", "read_regular_file", "os.open"])
    assert window.errors == []
    if kind == "onnx":
        reads.clear()
        sent = list(load_process.child_messages(str(path)))  # head, graph, nodes, tensors, end
        assert len(sent) == 5
        assert reads == ["read_regular_file", "os.open"]


# -- special files and workers that never return -------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_fifo_is_refused_and_the_window_still_closes(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)

    window.open_path(fifo)
    qtbot.waitUntil(lambda: not window.jobs, timeout=10000)
    assert window.tabs.count() == 0
    assert len(window.errors) == 1
    assert window.errors[0].startswith(f"{fifo}: ")
    assert "not a file" in window.errors[0] or "not a regular file" in window.errors[0]

    started = time.monotonic()
    window.close()
    assert time.monotonic() - started < 2


_QUIT_WHILE_LOADING = textwrap.dedent(
    """
    import sys, threading
    from pathlib import Path
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    from xocview.ui import workers
    from xocview.ui.main_window import MainWindow

    forever = threading.Event()
    def stuck(source):  # a read that never returns (a hung network share)
        print("reading", flush=True)
        forever.wait()
    workers.load_source = stuck
    app = QApplication(sys.argv[:1])
    window = MainWindow(QSettings(sys.argv[1], QSettings.Format.IniFormat))
    window.show()
    window.open_path(Path(sys.argv[2]))
    QTimer.singleShot(500, window.close)
    QTimer.singleShot(600, app.quit)
    code = app.exec()
    print("quit", flush=True)
    sys.exit(code)
    """
)


def test_quitting_does_not_wait_for_a_stuck_load(tmp_path: Path) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _QUIT_WHILE_LOADING,
            str(tmp_path / "settings.ini"),
            str(SAMPLES / "simple_model.json"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["reading", "quit"]
    assert time.monotonic() - started < 30  # start-up included; a wait would never end


def test_a_bug_in_the_loader_is_one_line_not_a_crash(qtbot, window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(source):  # type: ignore[no-untyped-def]
        raise KeyError("x" * HUGE + "\nsecond line")

    monkeypatch.setattr(workers, "load_source", broken)
    window.open_path(SAMPLES / "simple_model.json")
    qtbot.waitUntil(lambda: bool(window.errors), timeout=10000)

    message = window.errors[0]
    assert message.startswith(f"{SAMPLES / 'simple_model.json'}: internal error: KeyError: ")
    assert "\n" not in message and len(message) < 2500
    assert "characters)" in message  # the huge text was shortened, with its count
    assert window.open_failures.messages == [message]
    assert blocking_boxes() == []


def test_a_failed_export_shows_the_one_line_message(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    window.open_path(SAMPLES / "simple_model.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)

    window.export(tmp_path / "picture.gif")

    assert window.errors[-1].startswith(f"{tmp_path / 'picture.gif'}: cannot render to '.gif'")
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)]
    assert [b.text() for b in boxes if b.isVisible()] == [window.errors[-1]]
    assert [b.windowTitle() for b in boxes if b.isVisible()] == ["Cannot export image"]
    for b in boxes:
        b.close()


# -- huge labels ----------------------------------------------------------------------------


def huge_graph(path: Path) -> Path:
    """A graph whose node id, op type, tensor id, name and metadata are a million characters."""
    graph = {
        "id": "g",
        "name": "g",
        "tensors": [
            {"id": "x" * HUGE, "name": "input", "shape": [1, 3], "dtype": "float32"},
            {"id": "y", "name": "activation", "shape": [1, 3], "dtype": "float32"},
            {"id": "z", "name": "output", "shape": [1, 3], "dtype": "float32"},
        ],
        "nodes": [
            {
                "id": "n" * HUGE,
                "name": "Relu",
                "inputs": [0],
                "outputs": [1],
                "attributes": {},
                "metadata": {"note": "m" * HUGE},
            },
            {"id": "b", "name": "O" + "p" * HUGE, "inputs": [1], "outputs": [2], "attributes": {}},
        ],
        "inputs": [0],
        "outputs": [2],
        "metadata": {},
    }
    path.write_text(json.dumps(graph))
    return path


def test_render_of_huge_labels_is_a_normal_picture(tmp_path: Path) -> None:
    source = huge_graph(tmp_path / "huge.json")
    out = tmp_path / "huge.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "xocview", "render", str(source), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20
    image = QImage(str(out))
    assert not image.isNull()
    assert 100 < image.width() < 1200 and 100 < image.height() < 1200
    assert 0.2 < image.width() / image.height() < 5


def test_huge_labels_open_and_click_without_hanging(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = huge_graph(tmp_path / "huge.json")
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    d = view.doc.drawing
    assert max(len(t) for t in d.title) <= LABEL_CHARS
    assert max(len(t) for t in d.frame_titles + d.edge_label + d.detail) <= LABEL_CHARS
    assert float(d.w.max()) < LABEL_CHARS * 12
    node = view.doc.graph.index.node_position("n" * HUGE)
    k = int((d.item_node == node).nonzero()[0][0])

    started = time.monotonic()
    view.centerOn(QPointF(d.x[k], d.y[k]))
    pos = view.mapFromScene(QPointF(d.x[k], d.y[k]))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(pos))
    rows = window.inspector.rows()
    window.grab()
    assert time.monotonic() - started < 5

    assert view.doc.selected_node == node
    assert rows["Node"].startswith("n" * 200 + "...")
    assert len(rows["Node"]) < 250
    tree = window.inspector.tree
    assert all(
        len(tree.topLevelItem(i).toolTip(1)) <= 2100 for i in range(tree.topLevelItemCount())
    )
    tree.setCurrentItem(tree.topLevelItem(0))
    window.inspector.copy_value()  # Copy still gives the whole id
    assert QGuiApplication.clipboard().text() == "n" * HUGE


def test_a_bug_in_a_slot_is_one_line_in_the_window(qtbot, window, capsys) -> None:  # type: ignore[no-untyped-def]
    hook = report_unexpected(window)
    try:
        raise ValueError("first line\nsecond line")
    except ValueError:
        hook(*sys.exc_info())

    assert window.errors == ["xocview: internal error: ValueError: first line second line"]
    assert "Traceback" in capsys.readouterr().err  # for a bug report, not in the window
    boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)]
    shown = [b for b in boxes if b.isVisible()]
    assert [(b.windowTitle(), b.text()) for b in shown] == [("Internal error", window.errors[0])]
    for b in shown:
        b.close()


def test_a_bug_in_a_background_layout_keeps_the_picture(qtbot, window, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    window.open_path(SAMPLES / "simple_model.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    before = view.doc.drawing

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise IndexError("index 7 is out of bounds\nfor axis 0")

    monkeypatch.setattr(document, "ASYNC_FROM_ITEMS", 0)
    monkeypatch.setattr(workers, "build_drawing", broken)
    view.doc.set_direction("LR")

    qtbot.waitUntil(lambda: bool(window.errors), timeout=10000)
    assert window.errors == [
        "simple_model.json: internal error: IndexError: index 7 is out of bounds for axis 0"
    ]
    assert view.doc.drawing is before and not view.doc.busy
    for b in QApplication.topLevelWidgets():
        if isinstance(b, QMessageBox):
            b.close()
