"""One xocview per user: a second launch hands its files to the running one over a local socket.

The client sends one JSON line ``{"open": [absolute paths]}`` and waits for ``ok``, so that a
hung instance cannot swallow the files: without the answer the caller opens a window itself.
``xocview.show`` sends ``{"show": {...}}`` or ``{"compare": {...}}`` the same way
(``show_client``); those go to ``on_request`` whole.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QByteArray, QObject
from PySide6.QtNetwork import QLocalServer, QLocalSocket

__all__ = ["REQUESTS", "InstanceServer", "send_to_running", "server_name"]

TIMEOUT_MS = 3000
MAX_MESSAGE = 1 << 20  # bytes; a longer line is not from xocview
REQUESTS = ("show", "compare")  # the keys of the messages passed whole to ``on_request``


def server_name() -> str:
    """The per-user name; $XOCVIEW_INSTANCE overrides it (tests, separate sessions).

    On Linux it is a socket in $XDG_RUNTIME_DIR (private to the user) when there is one.
    """
    override = os.environ.get("XOCVIEW_INSTANCE")
    if override:
        return override
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if sys.platform.startswith("linux") and runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "xocview-instance")
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    return "xocview-" + re.sub(r"[^A-Za-z0-9_.-]", "_", user)


def send_to_running(name: str, paths: Sequence[Path], timeout_ms: int = TIMEOUT_MS) -> bool:
    """Ask the xocview serving ``name`` to open ``paths``; True once it has confirmed."""
    sock = QLocalSocket()
    sock.connectToServer(name)
    if not sock.waitForConnected(timeout_ms):
        return False
    message = json.dumps({"open": [str(Path(p).absolute()) for p in paths]}) + "\n"
    sock.write(QByteArray(message.encode("utf-8")))
    if not sock.waitForBytesWritten(timeout_ms):
        return False
    while not sock.canReadLine():
        if not sock.waitForReadyRead(timeout_ms):
            return False
    answer = bytes(sock.readLine().data()).strip()
    sock.disconnectFromServer()
    return answer == b"ok"


class InstanceServer(QObject):
    """Listens on ``name``; passes each launch's files to ``on_open`` and each ``show`` or
    ``compare`` message (a dict with one of ``REQUESTS`` as key) to ``on_request``."""

    def __init__(
        self,
        name: str,
        on_open: Callable[[list[Path]], None],
        parent: QObject | None = None,
        on_request: Callable[[dict[str, object]], None] | None = None,
    ) -> None:
        super().__init__(parent)
        self.name = name
        self._on_open = on_open
        self._on_request = on_request
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)

    def listen(self) -> bool:
        """Start serving; False when another live instance serves the name already.

        Asked first, because Qt's listen replaces a live server's socket file on Unix. A socket
        file left by a crashed instance answers no one; it is removed and reused.
        """
        probe = QLocalSocket()
        probe.connectToServer(self.name)
        if probe.waitForConnected(500):
            probe.abort()
            return False
        if self._server.listen(self.name):
            return True
        QLocalServer.removeServer(self.name)
        return self._server.listen(self.name)

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            sock = self._server.nextPendingConnection()
            sock.readyRead.connect(lambda s=sock: self._read(s))
            sock.disconnected.connect(sock.deleteLater)
            self._read(sock)  # the line may have arrived with the connection

    def _read(self, sock: QLocalSocket) -> None:
        if not sock.canReadLine():
            if sock.bytesAvailable() > MAX_MESSAGE:
                sock.abort()
            return
        try:
            message = json.loads(bytes(sock.readLine().data()))
            request = isinstance(message, dict) and any(k in message for k in REQUESTS)
            request = request and self._on_request is not None
            paths = [] if request else [Path(n) for n in message["open"] if isinstance(n, str)]
        except (ValueError, KeyError, TypeError):  # not one of ours: drop it
            sock.abort()
            return
        sock.write(QByteArray(b"ok\n"))
        sock.flush()
        sock.disconnectFromServer()
        if request and self._on_request is not None:
            self._on_request(message)
        else:
            self._on_open(paths)
