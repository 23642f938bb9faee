"""Files and workers that fight back: the window keeps running, Cancel ends a load at once, and
every failure of a worker (out of memory, too deep, a crash, a bug) is one line naming the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QPoint, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.conftest import REPO
from tests.ui import hostile_children
from xocview.formats.registry import load
from xocview.ui import app, document, graph_facts, load_process, workers
from xocview.ui.canvas import label_worker
from xocview.ui.canvas.painter import labels_placed
from xocview.ui.canvas.style import theme
from xocview.ui.canvas.view import GraphView
from xocview.ui.workers import LoadJob

SAMPLES = REPO / "sample_graphs"


def tiny_onnx(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    path.write_bytes(helper.make_model(graph).SerializeToString())  # protobuf, whatever the name
    return path


class Ticks:
    """Counts the turns of the event loop: a timer every 20 ms."""

    def __init__(self) -> None:
        self.count = 0
        self.timer = QTimer()
        self.timer.setInterval(20)
        self.timer.timeout.connect(self._tick)
        self.timer.start()

    def _tick(self) -> None:
        self.count += 1

    def during(self, qtbot: Any, ms: int) -> int:
        before = self.count
        qtbot.wait(ms)
        return self.count - before


def start_loading(window: Any, path: Path) -> LoadJob:
    job = window.open_path(path)
    deadline = time.monotonic() + 20
    while job.child is None and job.thread is not None and job.thread.is_alive():
        assert time.monotonic() < deadline, "no child process started"
        time.sleep(0.01)
    return job


def cancel_and_time(qtbot: Any, window: Any, job: LoadJob) -> float:
    """Click Cancel; the seconds until the reading process is gone and the window idle."""
    child = job.child
    assert child is not None
    started = time.monotonic()
    window._cancel.click()
    qtbot.waitUntil(lambda: not child._process.is_alive() and not window.jobs, timeout=5000)
    assert job.thread is not None
    job.thread.join(5)
    return time.monotonic() - started


def close_boxes() -> None:
    for w in QApplication.topLevelWidgets():
        if isinstance(w, QMessageBox):
            w.close()


# -- loading in a child process ------------------------------------------------------------


def test_a_reader_stuck_in_cpp_leaves_the_window_running_and_cancel_kills_it(
    qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load_process, "_child", hostile_children.infer_for_minutes)
    path = tiny_onnx(tmp_path / "stuck.onnx")
    ticks = Ticks()
    job = start_loading(window, path)
    assert job.child is not None
    qtbot.wait(500)  # the child has imported its module and is inside onnx's C++
    assert ticks.during(qtbot, 1000) >= 25  # 50 at 20 ms: the window runs on
    assert window._cancel.isVisible() and job.child._process.is_alive()

    assert cancel_and_time(qtbot, window, job) < 2
    assert window.errors == [] and window.tabs.count() == 0
    assert not window._cancel.isVisible()
    window.open_path(SAMPLES / "simple_model.json")  # and the window is as usable as before
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)


def test_a_real_function_bomb_never_holds_the_window(
    qtbot: Any, window: Any, tmp_path: Path
) -> None:
    path = tmp_path / "bomb.onnx"
    onnx.save(hostile_children.function_bomb(22), str(path))  # 2^22 calls, 2 KB
    assert path.stat().st_size < 3000
    ticks = Ticks()
    job = window.open_path(path)
    assert ticks.during(qtbot, 1500) >= 35  # 75 at 20 ms
    if window.jobs:  # still inferring (unless the reader refuses the bomb at once)
        qtbot.waitUntil(lambda: job.child is not None, timeout=5000)
        assert cancel_and_time(qtbot, window, job) < 2
        assert window.errors == [] and window.tabs.count() == 0
    else:
        assert window.tabs.count() == 1 or window.errors[0].startswith(f"{path}: ")


_QUIT_WHILE_READING = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from PySide6.QtCore import QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    from tests.ui import hostile_children
    from xocview.ui import load_process
    from xocview.ui.main_window import MainWindow

    load_process._child = hostile_children.infer_for_minutes
    app = QApplication(sys.argv[:1])
    window = MainWindow(QSettings(sys.argv[1], QSettings.Format.IniFormat))
    job = window.open_path(Path(sys.argv[2]))

    def report():
        print(job.child._process.pid if job.child else 0, flush=True)
        if sys.argv[3] == "crash":
            os.kill(os.getpid(), signal.SIGKILL)  # no clean-up of any kind
        app.quit()  # the window is not closed: nothing cancels the load

    QTimer.singleShot(3000, report)
    sys.exit(app.exec())
    """
)


@pytest.mark.parametrize("end", ["quit", "crash"])
def test_quitting_while_a_child_reads_ends_the_child_too(tmp_path: Path, end: str) -> None:
    path = tiny_onnx(tmp_path / "stuck.onnx")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _QUIT_WHILE_READING, str(tmp_path / "s.ini"), str(path), end],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == (0 if end == "quit" else -9), done.stderr
    pid = int(done.stdout.split()[0])
    assert pid > 0  # the child was reading when the application quit
    assert time.monotonic() - started < 30  # start-up included; a wait would take minutes
    deadline = time.monotonic() + 5
    while _alive(pid):  # and it is gone, not left running on its own
        assert time.monotonic() < deadline, "the child outlived the window"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize(
    ("child", "said"),
    [
        (hostile_children.killed, "the process reading it was killed (most likely out of memory)"),
        (hostile_children.out_of_memory, "out of memory while trying to open it"),
        (hostile_children.too_deep, "nested too deeply to open it"),
    ],
)
def test_a_reader_that_dies_or_runs_out_is_one_line_naming_the_file(
    qtbot: Any,
    window: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    child: Any,
    said: str,
) -> None:
    monkeypatch.setattr(load_process, "_child", child)
    path = tiny_onnx(tmp_path / "model.onnx")
    window.open_path(path)
    qtbot.waitUntil(lambda: bool(window.errors), timeout=20000)
    (message,) = window.errors
    assert message.startswith(f"{path}: {said}")
    assert "Error" not in message and "\n" not in message
    assert window.open_failures.messages == [message] and window.open_failures.isVisible()
    assert window.tabs.count() == 0


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (MemoryError(), "out of memory while trying to open it"),
        (RecursionError("maximum recursion depth exceeded"), "nested too deeply to open it"),
    ],
)
def test_a_json_reader_out_of_memory_or_stack_is_said_in_words(
    qtbot: Any, window: Any, monkeypatch: pytest.MonkeyPatch, error: Exception, said: str
) -> None:
    def failing(source: object) -> None:
        raise error

    monkeypatch.setattr(workers, "load_source", failing)
    path = SAMPLES / "simple_model.json"
    window.open_path(path)
    qtbot.waitUntil(lambda: bool(window.errors), timeout=10000)
    assert window.errors[0].startswith(f"{path}: {said}")
    assert "Error" not in window.errors[0]


def write_with_external_weights(folder: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """A model with one inline and one external weight (read lazily, by a closure)."""
    rng = np.random.default_rng(7)
    inline = rng.standard_normal((4, 4)).astype(np.float32)
    external = rng.standard_normal((4, 4)).astype(np.float32)
    (folder / "w.bin").write_bytes(external.tobytes())
    ext = numpy_helper.from_array(np.zeros((4, 4), np.float32), "e")
    ext.ClearField("raw_data")
    ext.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "w.bin"), ("offset", "0"), ("length", "64")):
        entry = ext.external_data.add()
        entry.key, entry.value = key, value
    nodes = [
        helper.make_node("MatMul", ["x", "i"], ["h"], name="mm1"),
        helper.make_node("MatMul", ["h", "e"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        initializer=[numpy_helper.from_array(inline, "i"), ext],
    )
    path = folder / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path, inline, external


def test_the_graph_from_the_child_equals_the_graph_read_here(qtbot: Any, tmp_path: Path) -> None:
    path, inline, external = write_with_external_weights(tmp_path)
    child = load_process.ChildLoad(path)
    made = child.result(lambda: None)
    assert made is not None
    graph, fmt = made
    assert fmt == "ONNX" and graph == load(path)
    weights = {t.id: t for t in graph.tensors if t.kind == "weight"}
    assert callable(weights["e"]._data)  # still lazy: read on first use, here
    assert np.array_equal(weights["i"].data, inline)
    assert np.array_equal(weights["e"].data, external)
    assert graph.node("mm2").op_type == "MatMul"  # the index is built anew here


def test_only_protobuf_files_are_read_apart(tmp_path: Path) -> None:
    assert load_process.reads_apart(tiny_onnx(tmp_path / "misnamed.json"))
    assert not load_process.reads_apart(SAMPLES / "simple_model.json")
    (tmp_path / "bom.onnx").write_bytes(b"\xef\xbb\xbf \n{}")
    assert not load_process.reads_apart(tmp_path / "bom.onnx")  # JSON, whatever its name
    assert not load_process.reads_apart(tmp_path / "missing.onnx")
    assert not load_process.reads_apart(tmp_path)  # a folder: the reader refuses it
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe.onnx")
        assert not load_process.reads_apart(tmp_path / "pipe.onnx")  # and does not block


# -- worker threads of an open file ----------------------------------------------------------


def open_sample(qtbot: Any, window: Any) -> GraphView:
    window.open_path(SAMPLES / "simple_model.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    return view


def test_labels_out_of_memory_leave_a_usable_drawing_and_say_so(
    qtbot: Any, window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    def exhausted(*args: object, **kwargs: object) -> None:
        calls.append(1)
        raise MemoryError

    monkeypatch.setattr(label_worker, "placed_labels", exhausted)  # any placement, from now
    view = open_sample(qtbot, window)
    d, style = view.doc.drawing, theme(view.theme_name)
    view.labels.request(d, style)  # (unless the first paint asked for them already)
    qtbot.waitUntil(lambda: bool(window.errors) and view.labels.idle, timeout=10000)
    assert window.errors == [
        "simple_model.json: out of memory while trying to place its shape labels; "
        "the drawing is shown without them"
    ]
    assert window.statusBar().currentMessage() == window.errors[0]
    assert labels_placed(d, style)  # none: the painter asks for them no more
    view.zoom_by(4.0)
    view.grab()  # paints without labels
    qtbot.wait(100)
    assert calls == [1] and len(window.errors) == 1


def test_facts_out_of_memory_are_said_and_not_made_again_in_the_window(
    qtbot: Any, window: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def exhausted(graph: object) -> None:
        raise MemoryError

    monkeypatch.setattr(document, "ASYNC_FROM_ITEMS", 0)
    monkeypatch.setitem(graph_facts.FACTS, "validate", exhausted)
    view = open_sample(qtbot, window)
    qtbot.waitUntil(lambda: bool(window.errors), timeout=10000)
    assert window.errors == ["simple_model.json: out of memory while trying to check it"]
    assert view.doc.fact("validate") is None  # not tried again in the GUI thread
    assert view.doc.fact("summary") is not None


def test_an_uncaught_exception_in_any_thread_is_one_line_in_the_window(
    qtbot: Any, window: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # restored after the test
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    open_sample(qtbot, window)
    app.guard_window(window)

    def broken() -> None:
        raise RuntimeError("boom\nsecond line")

    thread = threading.Thread(target=broken)
    thread.start()
    thread.join()
    qtbot.waitUntil(lambda: bool(window.errors), timeout=5000)
    assert window.errors == ["simple_model.json: internal error: RuntimeError: boom second line"]
    assert window.statusBar().currentMessage() == window.errors[0]
    assert "Traceback" in capsys.readouterr().err  # a bug: its traceback for a report


def test_a_slot_too_deep_for_the_stack_says_so_naming_the_file(
    qtbot: Any, window: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    open_sample(qtbot, window)
    app.guard_window(window)

    def deep(n: int) -> int:
        return deep(n + 1) + 1

    QTimer.singleShot(0, lambda: deep(0))  # a slot that recurses without end
    qtbot.waitUntil(lambda: bool(window.errors), timeout=5000)
    assert window.errors == [
        "simple_model.json: nested too deeply to show it (past the interpreter's recursion limit)"
    ]
    shown = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)]
    assert [b.text() for b in shown if b.isVisible()] == window.errors
    assert "Traceback" not in capsys.readouterr().err  # not a bug of xocview: no traceback
    close_boxes()


# -- messages that read well ---------------------------------------------------------------------


def test_a_long_failure_shows_its_start_wrapped_and_reads_well(
    qtbot: Any, window: Any, tmp_path: Path
) -> None:
    folder = tmp_path / ("models_from_a_colleague_" * 4)
    folder.mkdir()
    path = folder / "truncated_export_of_the_whole_network.onnx"
    path.write_bytes(tiny_onnx(tmp_path / "whole.onnx").read_bytes()[:-7])
    window.open_path(path)
    qtbot.waitUntil(lambda: bool(window.errors), timeout=20000)
    assert window.errors[0].startswith(f"{path}: ")
    failures = window.open_failures
    qtbot.waitUntil(failures.isVisible)
    text = failures.text
    assert text.horizontalScrollBar().maximum() == 0  # wrapped: nothing hidden sideways
    assert text.cursorForPosition(QPoint(4, 4)).position() == 0  # the file's name shows first
    failures.grab().save(str(tmp_path / "open_failures.png"))
    if os.environ.get("XOCVIEW_SHOTS"):  # for a look by eye
        failures.grab().save(os.path.join(os.environ["XOCVIEW_SHOTS"], "open_failures.png"))
