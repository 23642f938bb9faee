"""The command line run as a user runs it: a process of its own, started in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

__all__ = ["run"]


def run(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python -m xocview ARGS``, its output captured as text (``timeout``: a safety limit)."""
    return subprocess.run(
        [sys.executable, "-m", "xocview", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )
