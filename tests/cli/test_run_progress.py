"""`xocview run` on a terminal shows a long Loop's iterations on one line it rewrites, and
leaves nothing of it behind; piped, it prints no such line."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests.executor.test_loop_limits import counting_loop
from xocview.cli.app import main


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _loop_file(tmp_path: Path) -> Path:
    # 'less' ends the loop at acc >= 150,000: a second or so of body runs, several progress calls
    return counting_loop(tmp_path, 10**9, condition="less", stop_at=150_000.0)


def test_a_long_loop_shows_its_iterations_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert main(["run", str(_loop_file(tmp_path)), "--repeat", "1", "--warmup", "0"]) == 0
    shown = terminal.getvalue()
    updates = re.findall(r"\r\x1b\[Kloop1: iteration ([\d,]+) of 1,000,000,000", shown)
    assert updates, repr(shown[:300])
    counts = [int(u.replace(",", "")) for u in updates]
    assert counts == sorted(counts) and counts[-1] <= 150_000
    assert shown.endswith("\r\x1b[K")  # the line is cleared once the run ends
    assert "\x1b" not in capsys.readouterr().out


def test_piped_stderr_gets_no_progress_line(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(["run", str(_loop_file(tmp_path)), "--repeat", "1", "--warmup", "0"]) == 0
    captured = capsysbinary.readouterr()
    assert b"iteration" not in captured.err and b"\r" not in captured.err
