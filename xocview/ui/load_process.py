"""Reading a file in a child process, so that Cancel stops it at once and the window never waits.

onnx's C++ code (protobuf parsing, shape inference) holds the interpreter lock while it runs: in
a thread, a 2 KB model whose local functions call each other 2^29 times froze the window and
its load could not be cancelled. In a child process the read runs apart; Cancel kills the child.
A child that dies (killed for its memory, a crash in native code) is one line in the window,
never the window's end. JSON formats are read by Python code, which lets the window run between
its steps, and stay in a thread (``reads_apart``).

Children come from a fork server that imported the readers once (a child then starts in tens of
milliseconds, where a fresh interpreter takes a second), never from a fork of the Qt process,
whose threads and locks would come along half-held. The graph comes back in pieces of plain
tuples: pickling Node and Tensor objects took five times longer, and unpickling piece by piece
lets the window have the interpreter between two pieces. Weights not yet read come back as their
readers; a reader made inside a function (an external file's path and offset in a closure)
travels as its code and cell values, since both sides run the same interpreter and xocview.

Nothing here imports Qt: the child imports this module and the readers only.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import inspect
import io
import marshal
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.spawn as spawn
import operator
import os
import pickle
import signal
import stat
import sys
import threading
import types
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, TypeVar

from xocview.errors import XocviewError, shorten
from xocview.formats.registry import load_source
from xocview.formats.source import Source
from xocview.model import Graph, Node, Tensor
from xocview.model.gc_pause import gc_paused
from xocview.ui.failure_text import failure_message

__all__ = ["ChildLoad", "child_messages", "reads_apart", "warm_up"]

T = TypeVar("T")
_PIECE = 5_000  # nodes or tensors per piece: tens of milliseconds of unpickling each
_HEAD = 64  # bytes peeked at to tell JSON from protobuf
_JSON_START = (b"{", b"[")
_GRAPH_SKIPPED = ("nodes", "tensors", "_index")  # sent in pieces, or rebuilt on use
_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent ends


def reads_apart(path: Path) -> bool:
    """Whether ``path`` is read in a child process: every file but JSON (an ONNX protobuf is
    parsed and inferred by C++ code that holds the interpreter lock).

    Only the first bytes are read, without blocking; what is not a regular file is read in the
    thread, whose reader refuses it with its own message.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.read(fd, _HEAD)
    except OSError:
        return False
    finally:
        os.close(fd)
    head = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    return bool(head) and not head.startswith(_JSON_START)


def _context() -> Any:
    """The fork server where there is one (POSIX), else fresh interpreters (Windows)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        # the readers, imported and warmed up once by the server (see load_warm)
        ctx.set_forkserver_preload([__name__, "xocview.ui.load_warm"])
        return ctx
    return multiprocessing.get_context("spawn")


class ChildLoad:
    """One file read in a child process; ``kill`` ends it at once, from any thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        ctx = _context()
        self._conn, child_end = ctx.Pipe(duplex=False)
        self._process = ctx.Process(
            target=_run, args=(_child, str(path), child_end), name="xocview-read", daemon=True
        )
        _start_without_main(self._process)
        child_end.close()  # the child's end is the child's: its death then ends our reads
        self.killed = False

    def kill(self) -> None:
        self.killed = True
        with contextlib.suppress(OSError, ValueError, AttributeError):  # it has ended already
            self._process.kill()

    def result(self, between: Callable[[], None]) -> tuple[Graph, str] | None:
        """The graph and its format's name; None when it cannot come back in pieces (then the
        caller reads it itself: the child showed that the read ends). ``between()`` is called
        between pieces (it raises to stop). Raises XocviewError with the child's one line."""
        try:
            try:
                head = pickle.loads(self._conn.recv_bytes())
                if head[0] == "failed":
                    raise XocviewError(head[1])
                return _decode(self._received(between)), head[1]
            except (EOFError, OSError) as e:
                raise XocviewError(self._death()) from e
            except _Unsendable:
                return None
        finally:
            self._conn.close()  # the child, done, ends by itself: reaped at the next start

    def _received(self, between: Callable[[], None]) -> Iterator[tuple[str, Any]]:
        """The pieces as they come (the child sends each as soon as it is made)."""
        while True:
            between()
            kind, value = pickle.loads(self._conn.recv_bytes())
            if kind == "end":
                return
            if kind == "unpicklable":
                raise _Unsendable(value)
            yield kind, value

    def _death(self) -> str:
        """Why the child ended without an answer, in words."""
        self._process.join(5)
        code = self._process.exitcode
        name = shorten(str(self.path), 300)
        if code is not None and code < 0:
            number = -code
            if number == signal.SIGKILL:
                return f"{name}: the process reading it was killed (most likely out of memory)"
            what = signal.Signals(number).name if number in signal.valid_signals() else number
            return f"{name}: the process reading it crashed (signal {what})"
        return f"{name}: the process reading it ended without an answer (exit code {code})"


_LAUNCH = threading.Lock()


def _start_without_main(process: Any) -> None:
    """Start ``process`` without running the main script in it again.

    multiprocessing has a child import the parent's main module (the ``xocview`` script with
    the whole command line, or a test runner) so that functions defined there can be found;
    the child's function lives here, and that import tripled a child's start. What the child
    is told is made by ``spawn.get_preparation_data``, swapped while this start lasts.
    """
    with _LAUNCH:
        real = spawn.get_preparation_data

        def without_main(name: str) -> dict[str, Any]:
            data = real(name)
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
            return data

        spawn.get_preparation_data = without_main
        try:
            process.start()
        finally:
            spawn.get_preparation_data = real


def _run(work: Callable[[str, Connection], None], name: str, conn: Connection) -> None:
    """The child's first steps, whatever its work: it will not outlive the window."""
    _die_with_parent()
    work(name, conn)


def _child(name: str, conn: Connection) -> None:
    """In the child: read the file and send what ``child_messages`` makes of it."""
    with conn:
        for message in child_messages(name):
            conn.send_bytes(message)


def _die_with_parent() -> None:
    """End this child when the window's process ends, however it ends (killed, crashed, quit
    while this child was being started): a child stuck in onnx's C++ code would read on for
    minutes, alone. On Linux the kernel kills it when the fork server, which ends with the
    window's process, is gone; elsewhere a thread watches the window's process, which works
    whenever the reader lets the interpreter run."""
    # Each child gets the fork server's "window alive" pipe, to start children of its own;
    # holding it, the child kept the server (and so itself) alive after the window died.
    server = getattr(multiprocessing.forkserver, "_forkserver", None)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(alive, int):
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None  # type: ignore[union-attr]
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the fork server was gone before the kernel was asked
            os._exit(1)
    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None)
    if sentinel is not None:
        threading.Thread(target=_watch, args=(sentinel,), daemon=True).start()


def _watch(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])  # readable once the window's process is gone
    os._exit(1)


class _Unsendable(Exception):
    """The child's graph cannot be sent (deep metadata, a reader pickle cannot carry)."""


def child_messages(name: str) -> Iterator[bytes]:
    """What the child sends for the file ``name``: ``("failed", one line)``, or
    ``("graph", format)``, the pieces and ``("end", None)``, or, in place of the rest of the
    pieces, ``("unpicklable", reason)``."""
    try:
        graph, fmt = load_source(Source(Path(name)))
    except XocviewError as e:
        yield pickle.dumps(("failed", str(e)))
        return
    except BaseException as e:  # the child's every failure is one line
        yield pickle.dumps(("failed", failure_message(name, e)))
        return
    yield pickle.dumps(("graph", fmt.NAME))
    try:
        yield from _encode(graph)
    except BaseException as e:  # deep metadata, a weight reader that cannot be sent
        yield pickle.dumps(("unpicklable", failure_message(name, e, "send it")))
        return
    yield pickle.dumps(("end", None))


# -- the graph in pieces ------------------------------------------------------------------------


def _fields(cls: type, skipped: tuple[str, ...] = ()) -> list[str]:
    return [name for name in cls.__slots__ if name not in skipped]  # type: ignore[attr-defined]


def _row_fields(cls: type) -> tuple[list[str], bool]:
    """The slots a row of ``cls`` holds, and whether they are its constructor's arguments in
    order (``data`` fills ``_data``): then rows are rebuilt by the constructor, ten times
    faster than slot by slot."""
    names = list(inspect.signature(cls).parameters)
    slots = [name if name in cls.__slots__ else f"_{name}" for name in names]  # type: ignore[attr-defined]
    if sorted(slots) == sorted(_fields(cls)):
        return slots, True
    return _fields(cls), False


def _encode(graph: Graph) -> Iterator[bytes]:
    """The graph as pickled pieces: the graph's own fields, then nodes and tensors as tuples
    (one piece at a time: the parent unpickles one while the next is made)."""
    shell = tuple(getattr(graph, name) for name in _fields(Graph, _GRAPH_SKIPPED))
    yield _dumps(("graph", shell))
    with gc_paused():
        for kind, cls, items in (("nodes", Node, graph.nodes), ("tensors", Tensor, graph.tensors)):
            row = operator.attrgetter(*_row_fields(cls)[0])  # a tuple per item, made in C
            for start in range(0, len(items), _PIECE):
                yield _dumps((kind, list(map(row, items[start : start + _PIECE]))))


def _decode(pieces: Iterator[tuple[str, Any]]) -> Graph:
    """The graph from ``_encode``'s pieces (made with the collector paused: see gc_pause)."""
    graph = Graph.__new__(Graph)
    graph._index = None
    with gc_paused():
        for kind, value in pieces:
            if kind == "graph":
                for name, field in zip(_fields(Graph, _GRAPH_SKIPPED), value, strict=True):
                    setattr(graph, name, field)
                graph.nodes, graph.tensors = [], []
            elif kind == "nodes":
                graph.nodes.extend(_rebuild(Node, value))
            else:
                graph.tensors.extend(_rebuild(Tensor, value))
    return graph


def _rebuild(cls: type[T], rows: list[tuple[Any, ...]]) -> list[T]:
    names, by_constructor = _row_fields(cls)
    if by_constructor:
        return [cls(*row) for row in rows]
    setters = [getattr(cls, name).__set__ for name in names]
    made = []
    for row in rows:
        item = cls.__new__(cls)
        for put, value in zip(setters, row, strict=True):
            put(item, value)
        made.append(item)
    return made


class _Pickler(pickle.Pickler):
    """Pickles a function made inside another function (a lazy weight reader) by value."""

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is not types.FunctionType or "<" not in obj.__qualname__:
            return NotImplemented  # everything else as pickle does it
        cells = tuple(cell.cell_contents for cell in obj.__closure__ or ())
        code = marshal.dumps(obj.__code__)
        return _function, (obj.__module__, code, obj.__name__, obj.__defaults__, cells)


def _function(
    module: str, code: bytes, name: str, defaults: tuple[Any, ...] | None, cells: tuple[Any, ...]
) -> types.FunctionType:
    """The function ``_Pickler`` sent, with the globals of its module here."""
    globals_ = importlib.import_module(module).__dict__
    closure = tuple(types.CellType(value) for value in cells)
    return types.FunctionType(marshal.loads(code), globals_, name, defaults, closure or None)


def _dumps(obj: object) -> bytes:
    """``obj`` pickled; by ``_Pickler`` only when it holds what pickle cannot send (asking
    ``reducer_override`` about every list and dict doubles the time)."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        buffer = io.BytesIO()
        _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
        return buffer.getvalue()


def warm_up() -> None:
    """Start the fork server in the background, so that the first ONNX file opened does not
    wait the second it takes to import the readers (nothing where there is no fork server)."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return

    def start() -> None:
        _context()
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            multiprocessing.forkserver.ensure_running()

    threading.Thread(target=start, name="xocview-fork-server", daemon=True).start()
