"""The parent's side of a fuzz worker: start ``worker.py``, send it a case, judge what it does.

More than ``timeout`` seconds is a hang and more than ``mem_mb`` of resident memory a memory
failure: either kills the worker, which is started again for the next case.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fuzz.outcomes import FAILURES

__all__ = ["HARD_FACTOR", "Worker"]

HARD_FACTOR = 3  # a case is stopped after this many timeouts of wall time, busy or not
WORKER = Path(__file__).with_name("worker.py")
RECYCLE_AFTER, RECYCLE_MB = 300, 1024  # a worker is restarted after this many cases or MB


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (0 where there is no /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Worker:
    """One ``worker.py`` process; restarted after a kill, a crash or too much use."""

    def __init__(self, scratch: Path, *, preload: bool = True) -> None:
        self.scratch = scratch
        self.preload = preload  # False: import xocview on first use (fast start, for tests)
        self.proc: subprocess.Popen[bytes] | None = None
        self.cases = 0
        self.log_path = scratch / f"worker-{id(self)}.log"

    def _start(self) -> None:
        env = dict(
            os.environ,
            QT_QPA_PLATFORM="offscreen",
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYTHONFAULTHANDLER="1",
            PYTHONHASHSEED="0",
        )
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(WORKER), *([] if self.preload else ["--lazy"])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=self.scratch,
            )
        self.buf = b""
        self.cases = 0
        ready = self._read_line(120.0, None)
        if not isinstance(ready, dict) or "ready" not in ready:
            raise RuntimeError(f"fuzz worker did not start: {ready}; see {self.log_path}")

    def _read_line(self, timeout: float, mem_mb: float | None) -> dict[str, Any]:
        """The worker's next verdict, or a hang, memory or crash verdict of our own.

        On a machine shared with other jobs a case can wait for a core longer than it runs, so
        past ``timeout`` seconds the worker is judged by what it does: blocked (no CPU used
        for a second) is a hang at once, busy is a hang once it has used ``timeout`` seconds
        of CPU, and ``HARD_FACTOR * timeout`` seconds is a hang whatever it does.
        """
        assert self.proc is not None and self.proc.stdout is not None
        fd, pid = self.proc.stdout.fileno(), self.proc.pid
        start = time.monotonic()
        cpu0 = _cpu_seconds(pid)
        last_cpu, last_at = cpu0, start
        peak = 0.0
        while b"\n" not in self.buf:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return self._crashed()
                self.buf += chunk
                continue
            rss = _rss_mb(pid)
            peak = max(peak, rss)
            if mem_mb is not None and rss > mem_mb:
                self.stop()
                return {"outcome": "memory", "reason": f"RSS {rss:.0f} MB over {mem_mb} MB"}
            now = time.monotonic()
            if now - start <= timeout:
                continue
            cpu = _cpu_seconds(pid)
            if cpu - cpu0 >= timeout:
                why = f"{cpu - cpu0:.0f} s of CPU and no answer"
            elif now - start >= HARD_FACTOR * timeout:
                why = f"no answer in {now - start:.0f} s ({cpu - cpu0:.1f} s of CPU)"
            elif cpu > last_cpu or now - last_at < 1.0:
                if cpu > last_cpu:
                    last_cpu, last_at = cpu, now
                continue
            else:
                why = f"blocked: no answer in {now - start:.0f} s and no CPU used for 1 s"
            self.stop()
            return {"outcome": "hang", "reason": why}
        line, _, self.buf = self.buf.partition(b"\n")
        verdict: dict[str, Any] = json.loads(line)
        verdict["peak_mb"] = max(peak, verdict.get("peak_mb", 0.0))
        return verdict

    def _crashed(self) -> dict[str, Any]:
        assert self.proc is not None
        rc = self.proc.wait()
        self.proc = None
        how = f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exited {rc}"
        try:
            tail = self.log_path.read_text(errors="replace").strip().splitlines()[-6:]
        except OSError:
            tail = []
        return {"outcome": "crash", "reason": f"worker {how}", "traceback": "\n".join(tail)}

    def run(self, spec: dict[str, Any], timeout: float, mem_mb: float) -> dict[str, Any]:
        if self.proc is None or self.cases >= RECYCLE_AFTER:
            self.stop()
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        self.cases += 1
        self.proc.stdin.write((json.dumps(spec) + "\n").encode())
        self.proc.stdin.flush()
        verdict = self._read_line(timeout, mem_mb)
        if verdict.get("peak_mb", 0) > mem_mb and verdict["outcome"] not in FAILURES:
            verdict["reason"] = f"peak RSS {verdict['peak_mb']:.0f} MB; then {verdict['reason']}"
            verdict["outcome"] = "memory"
        if self.proc is not None and _rss_mb(self.proc.pid) > RECYCLE_MB:
            self.stop()
        return verdict

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self.proc = None
