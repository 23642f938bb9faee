"""Long fuzz runs and replays: ``python tests/fuzz/run.py --cases 10000 --jobs 2 --out fuzz-out``.

``--attacks`` runs the attack families of issue 28 instead of damaged seeds (``attacks.py``):
``python tests/fuzz/run.py --attacks --cases 10000`` prints a table by family and command and
the first failing case of each family; ``--family NAME`` (repeatable) keeps to some families.

Prints the cases per target and outcome and the failures grouped by cause; each failing case
is written to ``--out DIR/<case id>/`` (its input, side files and ``case.json``) with a line in
``DIR/failures.txt``. ``--replay DIR/<case id>`` (or ``--replay FILE``, on every target) runs
it again. Exits 1 when any case failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.fuzz` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz.harness import (
    ALL_TARGETS,
    COMMANDS,
    FAILURES,
    MEM_MB,
    TARGETS,
    TIMEOUT,
    Case,
    Result,
    Worker,
    make_case,
    run_cases,
)
from tests.fuzz.report import failure_report, mutator_table, summary_table
from tests.fuzz.seeds import FORMATS, all_seeds, suite_seeds


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", type=int, default=1000, help="how many cases (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="the fuzz seed (default 0)")
    p.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--out", type=Path, help="folder for failing cases")
    p.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per case (20)")
    p.add_argument("--mem-mb", type=float, default=MEM_MB, help="RSS cap in MB (2048)")
    p.add_argument("--target", action="append", choices=ALL_TARGETS, help="only these targets")
    p.add_argument("--attacks", action="store_true", help="the attack families, not mutations")
    p.add_argument("--family", action="append", help="only these attack families (--attacks)")
    p.add_argument("--format", action="append", choices=FORMATS, help="only these formats")
    p.add_argument("--suite", action="store_true", help="the small seeds of the in-suite slice")
    p.add_argument("--examples", type=int, default=1, help="reproducers shown per cause")
    p.add_argument("--replay", type=Path, metavar="FILE|CASE_DIR", help="run one saved case")
    p.add_argument("--by-mutator", action="store_true", help="also a table per mutator")
    p.add_argument("-v", "--verbose", action="store_true", help="print every failing case")
    return p.parse_args(argv)


def replay(path: Path, targets: list[str] | None, timeout: float, mem_mb: float) -> int:
    """Run a saved case (its folder) or any file on the given targets; 1 if any failed."""
    if path.is_dir() and (path / "case.json").is_file():
        info = json.loads((path / "case.json").read_text())
        print(f"{info['case']}: {info['description']}")
        print(f"  recorded: {info['outcome']}: {info['reason']}")
        file, targets = path / info["file"], targets or [info["target"]]
        extra = info.get("extra", {})
    else:
        file, targets, extra = path, targets or list(TARGETS), {}
    folder = Path(file).resolve().parent
    worker = Worker(folder)
    failed = 0
    try:
        for target in targets:  # attack targets write out.* beside the file (diff: base.*)
            spec = {**extra, "target": target, "path": str(file.resolve()), "out": str(folder)}
            v = worker.run(spec, timeout * COMMANDS.get(target, 1), mem_mb)
            failed += v["outcome"] in FAILURES
            print(f"  {target}: {v['outcome']}: {v.get('reason')} ({v.get('seconds', '?')} s)")
            if v.get("traceback"):
                print("    " + str(v["traceback"]).replace("\n", "\n    "))
    finally:
        worker.stop()
        worker.log_path.unlink(missing_ok=True)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ns = _args(argv)
    if ns.replay is not None:
        return replay(ns.replay, ns.target, ns.timeout, ns.mem_mb)
    if ns.attacks:
        return run_attacks(ns)
    seeds = suite_seeds() if ns.suite else all_seeds()
    if ns.format:
        seeds = tuple(s for s in seeds if s.fmt in ns.format)
    if not seeds:
        print("no seed files found", file=sys.stderr)
        return 2
    targets = ns.target or list(TARGETS)
    cases: list[Case] = [
        make_case(ns.seed, i, seeds, targets) for i in range(ns.start, ns.start + ns.cases)
    ]
    start = time.monotonic()
    results = _run(ns, cases)
    elapsed = time.monotonic() - start
    formats = sorted({s.fmt for s in seeds})
    print(f"{len(results)} cases (seed {ns.seed}, {len(seeds)} seed files: {', '.join(formats)})")
    print(f"in {elapsed:.1f} s with {ns.jobs} workers ({len(results) / elapsed:.1f} cases/s)")
    print()
    print(summary_table(results))
    if ns.by_mutator:
        print()
        print(mutator_table(results))
    return _tail(ns, results)


def run_attacks(ns: argparse.Namespace) -> int:
    """``--attacks``: the attack families, mixed evenly by the rng, reported by family."""
    from tests.fuzz.attacks import FAMILIES, family_table, first_reasons, make_attack_case

    unknown = sorted(set(ns.family or ()) - set(FAMILIES))
    if unknown:
        print(f"unknown families {unknown}; known: {', '.join(FAMILIES)}", file=sys.stderr)
        return 2
    cases: list[Case] = [
        make_attack_case(ns.seed, i, ns.family, ns.target)
        for i in range(ns.start, ns.start + ns.cases)
    ]
    start = time.monotonic()
    results = _run(ns, cases)
    elapsed = time.monotonic() - start
    print(f"{len(results)} attack cases (seed {ns.seed}, {len(ns.family or FAMILIES)} families)")
    print(f"in {elapsed:.1f} s with {ns.jobs} workers ({len(results) / elapsed:.1f} cases/s)")
    print()
    print(family_table(results))
    reasons = first_reasons(results)
    if reasons:
        print("\nfailing families (the first failing case of each):")
        print(reasons)
    return _tail(ns, results)


def _run(ns: argparse.Namespace, cases: list[Case]) -> list[Result]:
    if ns.out is not None:
        ns.out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {"done": 0, "failed": 0}
    start = time.monotonic()

    def progress(r: Result) -> None:
        counts["done"] += 1
        counts["failed"] += r.failed
        if ns.verbose and r.failed:
            print(r.line(), flush=True)
        if counts["done"] % 100 == 0:
            rate = counts["done"] / (time.monotonic() - start)
            print(
                f"... {counts['done']}/{len(cases)} cases, {counts['failed']} failed "
                f"({rate:.1f} cases/s)",
                file=sys.stderr,
                flush=True,
            )

    return run_cases(
        cases, jobs=ns.jobs, timeout=ns.timeout, mem_mb=ns.mem_mb, out_dir=ns.out,
        on_result=progress,
    )  # fmt: skip


def _tail(ns: argparse.Namespace, results: list[Result]) -> int:
    report = failure_report(results, examples=ns.examples)
    if report:
        print("\nfailures (and leaked exception names) by cause:")
        print(report)
    if ns.out is not None:
        print(f"\nfailing cases written to {ns.out}/ (replay: run.py --replay {ns.out}/CASE)")
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
