"""``xocview.show`` in the caller's process: the graph goes to the desktop window as a file.

The running xocview gets one line over the single-instance channel (``single_instance``):
``{"show": {"path", "name", "watch", "colour"}}`` or ``{"compare": {"a", "b", "name"}}``,
answered ``ok``. Without one, a detached ``python -m xocview open ... --show-name NAME``
starts a window with the same request. The caller waits for neither the window nor the
load: at most for the socket's short timeout.

A graph that is not a file the app reads goes as XOC JSON (which keeps node metadata: stored
times and imported metrics) written to a private per-user folder; the window deletes that
file once it has read it (``show_host``).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import math
import os
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from PySide6.QtCore import QDir

from xocview.errors import XocviewError
from xocview.formats import detect, save
from xocview.formats.atomic import write_atomic
from xocview.formats.source import Source
from xocview.model import Graph
from xocview.model.analyses.metrics import metric_mode
from xocview.ui.single_instance import server_name

__all__ = [
    "TIMEOUT_S",
    "deliver",
    "is_temp",
    "preferred_colouring",
    "request_from_args",
    "show_compare",
    "show_dir",
    "show_graph",
]

TIMEOUT_S = 3.0  # the most the caller waits for the running window's answer
STALE_S = 24 * 3600.0  # temp files a window never took (it crashed first) go after a day
_SPAWN_GRACE_S = 15.0  # a window started this recently may still be starting up


def show_graph(
    graph: Graph,
    *,
    name: str | None = None,
    path: Path | None = None,
    watch: bool = False,
    onnx_bytes: bytes | None = None,
) -> None:
    """Open ``graph`` in the desktop window, in a tab called ``name`` (default: the file's stem
    when ``path`` is sent, else the graph's name); a tab of that name is replaced, keeping its
    view. ``path``, when xocview reads it, is sent instead of a copy; else ``onnx_bytes`` (the
    serialized model the graph was read from: its weights keep their values), else the graph
    as XOC JSON. ``watch`` reloads the tab whenever that file changes. Returns at once.

    Raises XocviewError when ``watch`` has no readable file to watch, the graph cannot be
    written, or no window can be started.
    """
    sent = path.absolute() if path is not None and _readable(path) else None
    if watch and sent is None:
        where = f"{path}: " if path is not None else ""
        raise XocviewError(f"{where}watch=True needs path= naming a graph file xocview reads")
    tab = name or (sent.stem if sent is not None else graph.name or "graph")
    file = sent if sent is not None else write_temp(onnx_bytes or graph, tab)
    body: dict[str, object] = {"path": str(file), "name": tab, "watch": watch}
    colour = preferred_colouring(graph)
    if colour is not None:
        body["colour"] = colour
    _send({"show": body}, [file] if sent is None else [])


def show_compare(a: Graph, b: Graph, *, name: str | None = None) -> None:
    """Open the side-by-side comparison of ``a`` (old) and ``b`` (new), in a tab called
    ``name`` (default "A vs B" by the graphs' names); one of that name is replaced.

    Raises XocviewError as ``show_graph`` does.
    """
    tab = name or f"{a.name or 'a'} vs {b.name or 'b'}"
    files = [write_temp(a, a.name or "a"), write_temp(b, b.name or "b")]
    _send({"compare": {"a": str(files[0]), "b": str(files[1]), "name": tab}}, files)


# -- the request -------------------------------------------------------------------------------


def preferred_colouring(graph: Graph) -> str | None:
    """The colouring a shown graph opens with: ``time:<engine>`` or ``metric:<name>``, the one
    stored last (``performance`` tables keep the order values were put in, and the XOC file
    keeps it), None when the graph stores neither."""
    found = (
        stored
        for node in graph.nodes
        if isinstance(perf := node.metadata.get("performance"), Mapping)
        for stored in _stored(perf)
    )
    best = max(found, key=lambda stored: stored[0], default=None)
    return best[1] if best is not None else None


def _stored(perf: Mapping[str, object]) -> Iterator[tuple[tuple[int, int], str]]:
    """Each colouring one node's ``performance`` table offers, with its place in the table."""
    for pos, (key, value) in enumerate(perf.items()):
        if key == "time" and isinstance(value, Mapping):
            for j, (engine, v) in enumerate(value.items()):
                if _number(v):
                    yield (pos, j), f"time:{engine}"
        elif key != "time" and _number(value):
            yield (pos, 0), metric_mode(str(key))


def _number(value: object) -> bool:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return ok and math.isfinite(value)  # type: ignore[arg-type]


def request_from_args(
    files: Sequence[Path], show_name: str | None, watch: bool, colour: str | None, compare: bool
) -> dict[str, object] | None:
    """The request the hidden options of ``xocview open`` carry (what a window started by
    ``show_graph`` is to do); None for a plain open. Raises XocviewError on a wrong count."""
    if compare:
        if len(files) != 2:
            raise XocviewError(f"--compare takes two files, not {len(files)}")
        name = show_name or f"{files[0].stem} vs {files[1].stem}"
        return {"compare": {"a": str(files[0]), "b": str(files[1]), "name": name}}
    if show_name is None and not watch and colour is None:
        return None
    if len(files) != 1:
        raise XocviewError(f"--show-name and --watch take one file, not {len(files)}")
    body: dict[str, object] = {"path": str(files[0]), "name": show_name or files[0].stem}
    body["watch"] = watch
    if colour is not None:
        body["colour"] = colour
    return {"show": body}


def _command_args(message: Mapping[str, object]) -> list[str]:
    """``request_from_args``'s inverse: the arguments of ``xocview open`` for ``message``."""
    if "compare" in message:
        body = message["compare"]
        assert isinstance(body, Mapping)
        return [str(body["a"]), str(body["b"]), "--compare", f"--show-name={body['name']}"]
    body = message["show"]
    assert isinstance(body, Mapping)
    args = [str(body["path"]), f"--show-name={body['name']}"]
    if body.get("watch"):
        args.append("--watch")
    if body.get("colour") is not None:
        args.append(f"--colour={body['colour']}")
    return args


def _readable(path: Path) -> bool:
    """Whether xocview reads the file at ``path`` (its format told from its content)."""
    try:
        detect(Source(path))
    except (XocviewError, OSError):
        return False
    return True


# -- the private temp files --------------------------------------------------------------------


def show_dir() -> Path:
    """This user's folder for shown graphs, made private (0700) and checked to be ours.

    Raises XocviewError when it cannot be made or belongs to someone else."""
    try:
        user = re.sub(r"[^A-Za-z0-9_.-]", "_", getpass.getuser())
    except (KeyError, OSError):  # no name for this uid
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    folder = Path(tempfile.gettempdir()) / f"xocview-show-{user}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError as e:
        raise XocviewError(f"{folder}: cannot make the folder for shown graphs: {e}") from e
    mine = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    private = sys.platform == "win32" or not info.st_mode & 0o077
    if not stat.S_ISDIR(info.st_mode) or not mine or not private:
        raise XocviewError(f"{folder}: not a private folder of this user; remove it")
    return folder


def is_temp(path: Path) -> bool:
    """Whether ``path`` is a graph file ``write_temp`` made (the window deletes those)."""
    try:
        return path.parent.parent == show_dir() and path.suffix in (".json", ".onnx")
    except XocviewError:
        return False


def write_temp(graph: Graph | bytes, title: str) -> Path:
    """``graph`` as XOC JSON, or the bytes of an ONNX model (which keep its weights' values,
    where XOC JSON keeps none), in a fresh folder of ``show_dir`` (so that the file, which
    the window names, can be called after ``title``). Raises XocviewError when it cannot be
    written."""
    root = show_dir()
    _drop_stale(root)
    folder = root / secrets.token_hex(8)
    folder.mkdir(mode=0o700)
    stem = re.sub(r"[^\w.-]+", "_", title).strip("._")[:60] or "graph"
    file = folder / f"{stem}.{'onnx' if isinstance(graph, bytes) else 'json'}"
    try:
        if isinstance(graph, bytes):
            data = graph
            write_atomic(file, lambda f: f.write(data))
        else:
            save(graph, file)
    except XocviewError:
        remove_temp(file)
        raise
    return file


def remove_temp(path: Path) -> None:
    """Delete a file of ``write_temp`` and its folder; gone already is fine."""
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def _drop_stale(root: Path) -> None:
    """Remove folders no window took, left by a window that died before reading them."""
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            with contextlib.suppress(OSError):
                if entry.is_dir() and now - entry.stat().st_mtime > STALE_S:
                    shutil.rmtree(entry, ignore_errors=True)


# -- sending -------------------------------------------------------------------------------------

_spawned_at = -math.inf  # when this process last started a window


def _send(message: dict[str, object], temps: Sequence[Path]) -> None:
    """To the running window, else to a new one; ``temps`` are deleted when neither can be
    asked."""
    global _spawned_at
    name = server_name()
    if deliver(name, message):
        return
    # a window this process started a moment ago may be getting ready: ask it again a while
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() - _spawned_at < _SPAWN_GRACE_S and time.monotonic() < deadline:
        time.sleep(0.2)
        if deliver(name, message):
            return
    try:
        _spawn(message)
    except XocviewError:
        for path in temps:
            remove_temp(path)
        raise
    _spawned_at = time.monotonic()


def deliver(name: str, message: Mapping[str, object], timeout_s: float = TIMEOUT_S) -> bool:
    """Send ``message`` to the xocview serving ``name``; True once it answered ``ok``.

    On Unix a plain socket, not QLocalSocket: its blocking waits hold the interpreter lock,
    which would stall a window served by the same process (a notebook's own Qt loop, tests).
    """
    data = (json.dumps(message) + "\n").encode("utf-8")
    if sys.platform == "win32":
        return _deliver_qt(name, data, timeout_s)
    where = name if os.path.isabs(name) else os.path.join(QDir.tempPath(), name)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout_s)
            sock.connect(where)
            sock.sendall(data)
            answer = b""
            while b"\n" not in answer and len(answer) < 64:
                chunk = sock.recv(64)
                if not chunk:
                    break
                answer += chunk
    except OSError:  # nobody listens, a socket left by a crash, or no answer in time
        return False
    return answer.strip() == b"ok"


def _deliver_qt(name: str, data: bytes, timeout_s: float) -> bool:
    """Windows' named pipe, through Qt."""
    from PySide6.QtCore import QByteArray
    from PySide6.QtNetwork import QLocalSocket

    ms = int(timeout_s * 1000)
    sock = QLocalSocket()
    sock.connectToServer(name)
    if not sock.waitForConnected(ms):
        return False
    sock.write(QByteArray(data))
    if not sock.waitForBytesWritten(ms):
        return False
    while not sock.canReadLine():
        if not sock.waitForReadyRead(ms):
            return False
    answer = bytes(sock.readLine().data()).strip()
    sock.disconnectFromServer()
    return answer == b"ok"


def _spawn(message: Mapping[str, object]) -> None:
    """Start a detached xocview window that carries out ``message``. Raises XocviewError when
    there is no display or the process cannot be started."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
    ):
        raise XocviewError("no display to open a window on; use xocview.render() instead")
    argv = [sys.executable, "-m", "xocview", "open", *_command_args(message)]
    flags = 0
    if sys.platform == "win32":
        flags = subprocess.CREATE_NEW_PROCESS_GROUP | subprocess.DETACHED_PROCESS
    try:
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            creationflags=flags,
        )
    except OSError as e:
        raise XocviewError(f"{sys.executable}: cannot start the xocview window: {e}") from e
