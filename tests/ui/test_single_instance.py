"""A second launch hands its files to the running window over the per-user local socket."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from tests.conftest import REPO
from xocview.ui.app import attach
from xocview.ui.single_instance import InstanceServer, send_to_running, server_name

TINY = REPO / "sample_graphs" / "tiny_transformer.json"
SIMPLE = REPO / "sample_graphs" / "simple_model.json"


@pytest.fixture
def name() -> str:
    """A server name no other test run or real xocview uses."""
    return f"xocview-test-{uuid.uuid4().hex[:12]}"


def launch(name: str, tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    """``python -m xocview ARGS`` as a file manager would start it, bound to ``name``."""
    env = dict(os.environ, XOCVIEW_INSTANCE=name, QT_QPA_PLATFORM="offscreen")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # a window of its own keeps its settings
    return subprocess.Popen(
        [sys.executable, "-m", "xocview", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def send_from_process(name: str, paths: list[Path]) -> subprocess.Popen[str]:
    """``send_to_running`` in another process (as a second launch does); exit 0 when confirmed.

    Not a thread: the blocking socket waits hold the interpreter lock, so this one could not
    serve the events that answer them."""
    code = (
        "import sys; from pathlib import Path; "
        "from xocview.ui.single_instance import send_to_running; "
        "sys.exit(0 if send_to_running(sys.argv[1], [Path(p) for p in sys.argv[2:]]) else 1)"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, name, *map(str, paths)], cwd=REPO, text=True
    )


def tab_paths(window) -> list[str]:  # type: ignore[no-untyped-def]
    return [window.tabs.tabToolTip(i) for i in range(window.tabs.count())]


def test_second_launch_opens_a_tab_in_the_running_window(qtbot, window, name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    attach(window, QApplication.instance(), name)
    window.showMinimized()

    second = launch(name, tmp_path, "sample_graphs/tiny_transformer.json")

    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    assert second.wait(timeout=30) == 0, second.stderr.read() if second.stderr else ""
    assert tab_paths(window) == [str(TINY)]  # made absolute against the launch's folder
    assert not window.isMinimized()


def test_new_window_keeps_its_files_to_itself(qtbot, window, name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    attach(window, QApplication.instance(), name)

    second = launch(name, tmp_path, "--new-window", str(TINY))
    try:
        qtbot.wait(4000)  # long enough for a hand-off to have arrived
        assert second.poll() is None  # it runs its own window
        assert window.tabs.count() == 0
    finally:
        second.kill()
        second.wait(timeout=30)


def test_several_files_in_one_message(qtbot, window, name) -> None:  # type: ignore[no-untyped-def]
    attach(window, QApplication.instance(), name)

    sender = send_from_process(name, [TINY, SIMPLE])

    qtbot.waitUntil(lambda: window.tabs.count() == 2 and sender.poll() == 0, timeout=30000)
    assert sorted(tab_paths(window)) == sorted([str(SIMPLE), str(TINY)])


def test_a_second_server_defers_to_the_live_one(qtbot, name) -> None:  # type: ignore[no-untyped-def]
    got: list[list[Path]] = []
    first = InstanceServer(name, got.append)
    second = InstanceServer(name, lambda paths: pytest.fail("the second server was reached"))
    try:
        assert first.listen()
        assert not second.listen()
        sender = send_from_process(name, [TINY])
        qtbot.waitUntil(lambda: sender.poll() == 0 and got == [[TINY]], timeout=30000)
    finally:
        first.close()


@pytest.mark.skipif(sys.platform == "win32", reason="socket files are a Unix matter")
def test_a_socket_left_by_a_crash_is_reclaimed(qtbot, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "xocview.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, never listening: what a killed instance leaves behind
    dead.close()
    assert path.exists()
    got: list[list[Path]] = []
    server = InstanceServer(str(path), got.append)
    try:
        assert server.listen()
        sender = send_from_process(str(path), [TINY])
        qtbot.waitUntil(lambda: sender.poll() == 0 and got == [[TINY]], timeout=30000)
    finally:
        server.close()


def test_without_a_running_instance_nothing_is_handed_off(name) -> None:  # type: ignore[no-untyped-def]
    assert send_to_running(name, [TINY], timeout_ms=500) is False


def test_a_stranger_message_is_dropped_unanswered(qtbot, name) -> None:  # type: ignore[no-untyped-def]
    got: list[list[Path]] = []
    server = InstanceServer(name, got.append)
    assert server.listen()
    code = (
        "import sys; from PySide6.QtNetwork import QLocalSocket; s = QLocalSocket(); "
        "s.connectToServer(sys.argv[1]); assert s.waitForConnected(5000); s.write(b'hello\\n'); "
        "s.waitForBytesWritten(5000); s.waitForReadyRead(5000); "
        "sys.stdout.write(repr(bytes(s.readAll().data())))"
    )
    stranger = subprocess.Popen(
        [sys.executable, "-c", code, name], stdout=subprocess.PIPE, text=True
    )
    try:
        qtbot.waitUntil(lambda: stranger.poll() is not None, timeout=30000)
    finally:
        server.close()
    assert stranger.returncode == 0
    assert stranger.stdout is not None and stranger.stdout.read() == "b''"
    assert got == []


def test_the_name_is_per_user_and_can_be_overridden(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XOCVIEW_INSTANCE", "xocview-elsewhere")
    assert server_name() == "xocview-elsewhere"
    monkeypatch.delenv("XOCVIEW_INSTANCE")
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    name = server_name()
    assert name.startswith("xocview-") and name != "xocview-"
