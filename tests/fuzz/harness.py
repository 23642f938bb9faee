"""The fuzz harness: cases from a fixed seed, long-lived workers with a time limit and memory cap.

A case is (seed file, mutator, target), drawn from ``random.Random(f"{fuzz_seed}:{index}")`` so
that case 1234 of seed 0 is the same file and command on every machine. The parent writes the
damaged file into a folder of its own, hands the path to a worker (``worker.py``) and watches
it: more than ``timeout`` seconds is a hang, more than ``mem_mb`` of resident memory is a
memory failure; either kills the worker, which is started again for the next case.
"""

from __future__ import annotations

import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.mutators import BYTE_MUTATORS, JSON_MUTATORS, SPECIALS, Mutant
from tests.fuzz.onnx_mutators import ONNX_MUTATORS
from tests.fuzz.seeds import Seed

__all__ = [
    "FAILURES",
    "OUTCOMES",
    "TARGETS",
    "Case",
    "Result",
    "command",
    "make_case",
    "run_cases",
    "special_cases",
]

TARGETS = ("info", "check", "render", "run", "api-load", "api-check", "api-run")
OUTCOMES = ("ok", "error", "leaked", "missed", "message", "internal", "hang", "memory", "crash")
FAILURES = frozenset({"message", "internal", "hang", "memory", "crash"})
TIMEOUT, MEM_MB = 20.0, 2048
HARD_FACTOR = 3  # a case is stopped after this many timeouts of wall time, busy or not
WORKER = Path(__file__).with_name("worker.py")
RECYCLE_AFTER, RECYCLE_MB = 300, 1024  # a worker is restarted after this many cases or MB
SPECIAL_WEIGHT = 0.15


@dataclass(frozen=True)
class Case:
    """One fuzz case: which seed, which mutation (and its random state), which command."""

    case_id: str
    seed: Seed
    mutator: str
    target: str
    rng_key: str

    def mutant(self) -> Mutant:
        """The damaged file, made again from the case's key (deterministic)."""
        rng = random.Random(self.rng_key + ":mutate")
        data = self.seed.data
        if self.mutator in SPECIALS:
            return SPECIALS[self.mutator](rng, data)
        if self.mutator in BYTE_MUTATORS:
            return BYTE_MUTATORS[self.mutator](rng, data)
        if self.mutator in ONNX_MUTATORS:
            try:
                return ONNX_MUTATORS[self.mutator](rng, data)
            except Exception as e:  # onnx cannot parse the seed: damage its bytes
                m = BYTE_MUTATORS["byte.flip"](rng, data)
                m.description = f"({self.mutator} n/a: {type(e).__name__}) {m.description}"
                return m
        try:
            root = json.loads(data)
        except ValueError:  # an invalid seed (kept on purpose): damage its bytes instead
            m = BYTE_MUTATORS["byte.flip"](rng, data)
            m.description = f"({self.mutator} n/a: seed is not JSON) {m.description}"
            return m
        return JSON_MUTATORS[self.mutator](rng, root)

    @property
    def file_name(self) -> str:
        return Path(self.seed.name).stem[:40] + self.seed.suffix


def mutators_for(seed: Seed) -> list[tuple[str, float]]:
    """The mutators that apply to ``seed`` and their weights."""
    own = ONNX_MUTATORS if seed.fmt == "onnx" else JSON_MUTATORS
    pairs = [(name, 1.0) for name in BYTE_MUTATORS] + [(name, 1.5) for name in own]
    return pairs + [(name, SPECIAL_WEIGHT) for name in SPECIALS]


def make_case(
    fuzz_seed: int, index: int, seeds: Sequence[Seed], targets: Sequence[str] = TARGETS
) -> Case:
    """Case ``index`` of a run: a format, a seed of it, a mutator and a target, all from the rng."""
    rng_key = f"{fuzz_seed}:{index}"
    rng = random.Random(rng_key)
    formats = sorted({s.fmt for s in seeds})
    fmt = rng.choice(formats)
    seed = rng.choice([s for s in seeds if s.fmt == fmt])
    names, weights = zip(*mutators_for(seed), strict=False)
    mutator = rng.choices(names, weights)[0]
    target = rng.choice(list(targets))
    return Case(f"s{fuzz_seed}-{index:06d}", seed, mutator, target, rng_key)


def special_cases(seeds: Sequence[Seed], targets: Sequence[str] = TARGETS) -> list[Case]:
    """Every special file (FIFO, /dev/zero, ...) on every target, named as each format's seeds."""
    by_suffix = {s.suffix: s for s in seeds}
    cases = []
    for i, (kind, target) in enumerate((k, t) for k in SPECIALS for t in targets):
        seed = list(by_suffix.values())[i % len(by_suffix)]
        cases.append(Case(f"special-{i:03d}", seed, kind, target, f"special:{i}"))
    return cases


def command(case: Case) -> str:
    """What the case ran, as a user would type it (FILE is the case's input)."""
    cli = {"info": "info FILE", "check": "check FILE", "render": "render FILE out.png"}
    if case.target in cli:
        return f"xocview {cli[case.target]}"
    if case.target == "run":
        return "xocview run FILE --repeat 1 --max-memory 1G"
    call = {"api-load": "registry.load(FILE)", "api-check": "registry.check(FILE)"}
    return call.get(case.target, "executor.run(registry.load(FILE), repeat=1, max_memory=2**30)")


def materialise(case: Case, folder: Path, mutant: Mutant | None = None) -> tuple[Path, Mutant]:
    """Write the case's file (and side files) into ``folder``; returns its path."""
    mutant = mutant or case.mutant()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / case.file_name
    for name, data in {**case.seed.side_files, **mutant.side_files}.items():
        (folder / name).write_bytes(data)
    kind = mutant.special
    if kind is None:
        path.write_bytes(mutant.data)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "dangling":
        path.symlink_to(folder / "missing.bin")
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(3 * 2**30)
    return path, mutant


@dataclass
class Result:
    """A case's verdict: outcome, a one-line reason and, for bugs, where in xocview it broke."""

    case: Case
    description: str
    verdict: dict[str, Any] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return str(self.verdict.get("outcome", "crash"))

    @property
    def failed(self) -> bool:
        return self.outcome in FAILURES

    def line(self) -> str:
        where = f" at {self.verdict['where']}" if self.verdict.get("where") else ""
        return (
            f"{self.case.case_id} {self.case.target} {self.case.seed.name} "
            f"[{self.description[:160]}]: {self.outcome}: "
            f"{' '.join(str(self.verdict.get('reason', '')).split())[:300]}{where}"
        )


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


def run_cases(
    cases: Iterable[Case],
    *,
    jobs: int = 2,
    timeout: float = TIMEOUT,
    mem_mb: float = MEM_MB,
    out_dir: Path | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Run every case on ``jobs`` workers; failing cases are written to ``out_dir`` if given."""
    todo = iter(cases)
    lock = threading.Lock()
    results: list[Result] = []
    scratch = Path(tempfile.mkdtemp(prefix="xocfuzz-"))

    def drive(k: int) -> None:
        worker = Worker(scratch)
        try:
            while True:
                with lock:
                    case = next(todo, None)
                if case is None:
                    return
                result = _run_one(worker, case, scratch / f"w{k}", timeout, mem_mb)
                if result.failed and out_dir is not None:
                    save_failure(result, out_dir)
                with lock:
                    results.append(result)
                    if on_result is not None:
                        on_result(result)
        finally:
            worker.stop()

    threads = [threading.Thread(target=drive, args=(k,), daemon=True) for k in range(jobs)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return sorted(results, key=lambda r: r.case.case_id)


def _run_one(worker: Worker, case: Case, folder: Path, timeout: float, mem_mb: float) -> Result:
    shutil.rmtree(folder, ignore_errors=True)
    try:
        path, mutant = materialise(case, folder)
    except Exception as e:  # a bug of the harness, reported as a crash
        return Result(case, "?", {"outcome": "crash", "reason": f"harness: {e!r}"})
    spec = {"target": case.target, "path": str(path), "out": str(folder)}
    verdict = worker.run(spec, timeout, mem_mb)
    shutil.rmtree(folder, ignore_errors=True)
    return Result(case, mutant.description, verdict)


def save_failure(result: Result, out_dir: Path) -> None:
    """The case's input (and side files) in ``out_dir/<case id>/`` and its reason in a line."""
    folder = out_dir / result.case.case_id
    shutil.rmtree(folder, ignore_errors=True)
    path, _ = materialise(result.case, folder)
    info = {
        "case": result.case.case_id,
        "target": result.case.target,
        "file": path.name,
        "seed": result.case.seed.name,
        "mutator": result.case.mutator,
        "description": result.description,
        **result.verdict,
    }
    (folder / "case.json").write_text(json.dumps(info, indent=2) + "\n")
    with open(out_dir / "failures.txt", "a") as f:
        f.write(result.line().replace("\n", " ") + "\n")
