"""The fuzz harness: cases from a fixed seed, long-lived workers with a time limit and memory cap.

A case is (seed file, mutator, target), drawn from ``random.Random(f"{fuzz_seed}:{index}")`` so
that case 1234 of seed 0 is the same file and command on every machine. The parent writes the
damaged file into a folder of its own, hands the path to a worker (``worker.py``) and watches
it (``worker_proc.py``): more than ``timeout`` seconds is a hang, more than ``mem_mb`` of
resident memory is a memory failure; either kills the worker, which is started again for the
next case. Each worker has a folder of its own, its current directory, holding the marker file
of ``markers.py``; its cases are written one at a time into ``case/`` below it.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.binary_mutators import BINARY_MUTATORS, SAFETENSORS_MUTATORS, ZIP_MUTATORS
from tests.fuzz.markers import SECRET, escape_problem, plant
from tests.fuzz.mutators import BYTE_MUTATORS, JSON_MUTATORS, SPECIALS, Mutant
from tests.fuzz.onnx_mutators import ONNX_MUTATORS
from tests.fuzz.outcomes import (
    ALL_TARGETS,
    ATTACK_TARGETS,
    COMMANDS,
    FAILURES,
    MEM_MB,
    OUTCOMES,
    SAVE_TARGETS,
    TARGETS,
    TIMEOUT,
)
from tests.fuzz.seeds import Seed
from tests.fuzz.tf_mutators import TF_MUTATORS
from tests.fuzz.worker_proc import Worker

__all__ = [
    "ALL_TARGETS",
    "ATTACK_TARGETS",
    "COMMANDS",
    "FAILURES",
    "MEM_MB",
    "OUTCOMES",
    "SAVE_TARGETS",
    "TARGETS",
    "TIMEOUT",
    "Case",
    "Result",
    "Worker",
    "command",
    "make_case",
    "run_cases",
    "special_cases",
]

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
        if self.mutator in BINARY_MUTATORS or self.mutator in TF_MUTATORS:
            try:
                return {**BINARY_MUTATORS, **TF_MUTATORS}[self.mutator](rng, data)
            except Exception as e:  # the seed has no header or is no zip: damage its bytes
                m = BYTE_MUTATORS["byte.flip"](rng, data)
                m.description = f"({self.mutator} n/a: {type(e).__name__}) {m.description}"
                return m
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

    def mutant_at(self, folder: Path) -> Mutant:
        """The file as written into ``folder`` (attack cases name the marker beside it)."""
        return self.mutant()

    @property
    def file_name(self) -> str:
        return Path(self.seed.name).stem[:40] + self.seed.suffix


def mutators_for(seed: Seed) -> list[tuple[str, float]]:
    """The mutators that apply to ``seed`` and their weights."""
    own: Iterable[str] = {
        "onnx": ONNX_MUTATORS,
        "safetensors": SAFETENSORS_MUTATORS,
        "pytorch": ZIP_MUTATORS,
        "keras": ZIP_MUTATORS,  # an .h5 seed gets byte flips instead
        "tflite": {},
        "tensorflow": TF_MUTATORS,
    }.get(seed.fmt, JSON_MUTATORS)
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
    more = {
        "convert": "xocview convert FILE out.json; xocview convert FILE out.onnx",
        "diff": "xocview diff FILE base.*",
        "import-times": "xocview import-times FILE profile.json -o times.json",
        "convert-onnx": "xocview convert FILE out.onnx (beside other models' data files)",
        "convert-kill": "xocview convert FILE out.onnx killed at a step, then again",
    }
    if case.target in more:
        return more[case.target]
    call = {"api-load": "registry.load(FILE)", "api-check": "registry.check(FILE)"}
    return call.get(case.target, "executor.run(registry.load(FILE), repeat=1, max_memory=2**30)")


def materialise(case: Case, folder: Path, mutant: Mutant | None = None) -> tuple[Path, Mutant]:
    """Write the case's file (and side files) into ``folder``; returns its path."""
    mutant = mutant or case.mutant_at(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (mutant.file_name or case.file_name)
    for name, data in {**case.seed.side_files, **mutant.side_files}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    for name, target in mutant.links.items():
        (folder / name).symlink_to(target)
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
        home = scratch / f"w{k}"  # the worker's cwd, with the marker; its cases in home/case
        plant(home)
        worker = Worker(home)
        try:
            while True:
                with lock:
                    case = next(todo, None)
                if case is None:
                    return
                result = _run_one(worker, case, home / "case", timeout, mem_mb)
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
    marker = plant(folder.parent)
    inputs = [*case.seed.side_files, *mutant.side_files, *mutant.links, path.name]
    spec = {"target": case.target, "path": str(path), "out": str(folder), "secret": SECRET}
    verdict = worker.run({**mutant.extra, **spec}, timeout * COMMANDS.get(case.target, 1), mem_mb)
    escaped = escape_problem(marker, folder, inputs)
    if escaped:
        first = f" (then {verdict.get('outcome')}: {verdict.get('reason')})"
        verdict = {**verdict, "outcome": "escaped", "reason": escaped + first[:300]}
    shutil.rmtree(folder, ignore_errors=True)
    return Result(case, mutant.description, verdict)


def save_failure(result: Result, out_dir: Path) -> None:
    """The case's input (and side files) in ``out_dir/<case id>/`` and its reason in a line."""
    folder = out_dir / result.case.case_id
    shutil.rmtree(folder, ignore_errors=True)
    plant(out_dir)  # the marker the attack files name as ../marker.bin
    path, mutant = materialise(result.case, folder)
    info = {
        "extra": mutant.extra,
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
