"""Run every ONNX node case through xocview, print the pass/wrong/refused/error/na table, and
compare with expectations.txt; `--write-expectations` rewrites the file from this run.

The file is written here and never by pytest: promoting a case (deleting its line) or
accepting a new failure is a change someone reviews in the diff.

With ``--anchors`` the same cases also run through onnxruntime and onnx's ReferenceEvaluator,
judged by the same comparison, and the table has a row per engine with the seconds each sweep
took (loading included).

Usage: python tests/conformance/run.py [--write-expectations] [--verbose] [--anchors]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `tests.conformance` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import onnx

from tests.conformance.node_cases import (
    EXPECTATIONS,
    KINDS,
    Expectation,
    case_names,
    outcome,
    read_expectations,
)

ORDER = ["pass", *KINDS]


def run_all() -> dict[str, Expectation | None]:
    """Every case's outcome (None: passed), in name order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: outcome(name) for name in case_names()}


def counts(outcomes: dict[str, Expectation | None]) -> Counter[str]:
    return Counter("pass" if o is None else o.kind for o in outcomes.values())


def summary(outcomes: dict[str, Expectation | None]) -> str:
    """The table on one line, for the file's header."""
    n = counts(outcomes)
    return ", ".join(f"{kind} {n.get(kind, 0)}" for kind in ORDER) + f" of {len(outcomes)}"


def table(outcomes: dict[str, Expectation | None]) -> str:
    n = counts(outcomes)
    rows = [f"{kind:<8} {n.get(kind, 0):>5}" for kind in ORDER]
    return "\n".join([*rows, f"{'total':<8} {len(outcomes):>5}"])


def write_expectations(outcomes: dict[str, Expectation | None], path: Path = EXPECTATIONS) -> None:
    """One ``case  kind  reason`` line per case that does not pass, names aligned."""
    failing = {name: o for name, o in outcomes.items() if o is not None}
    width = max((len(name) for name in failing), default=0)
    head = [
        "# ONNX node conformance cases that xocview does not pass (xfail strict in",
        "# test_node_cases.py). Kinds: refused (clean refusal), wrong (output differs),",
        "# error (a crash), na (map or sparse values). Do not edit by hand: run",
        "# `python tests/conformance/run.py --write-expectations` and review the diff.",
        f"# onnx {onnx.__version__}: {summary(outcomes)}",
    ]
    lines = [f"{name:<{width}}  {o.kind:<7}  {o.reason}" for name, o in failing.items()]
    path.write_text("\n".join([*head, *lines]) + "\n")


def engine_table(rows: dict[str, tuple[dict[str, Expectation | None], float]]) -> str:
    """One row per engine: its counts of each outcome and the seconds of its sweep."""
    head = f"{'engine':<12}" + "".join(f"{kind:>9}" for kind in ORDER) + f"{'seconds':>9}"
    lines = [head]
    for engine, (outcomes, seconds) in rows.items():
        n = counts(outcomes)
        cells = "".join(f"{n.get(kind, 0):>9}" for kind in ORDER)
        lines.append(f"{engine:<12}{cells}{seconds:>9.1f}")
    return "\n".join(lines)


def differences(
    outcomes: dict[str, Expectation | None], expected: dict[str, Expectation]
) -> list[str]:
    """Cases whose kind differs from expectations.txt (promotions, new failures, stale lines)."""
    out = []
    for name, o in outcomes.items():
        was = expected.get(name)
        now = None if o is None else o.kind
        before = None if was is None else was.kind
        if now != before:
            out.append(f"{name}: {before or 'pass'} -> {now or 'pass'}")
    out += [f"{name}: listed but not a case" for name in expected if name not in outcomes]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-expectations", action="store_true", help=f"rewrite {EXPECTATIONS.name}"
    )
    parser.add_argument("--verbose", action="store_true", help="print every non-passing case")
    parser.add_argument(
        "--anchors",
        action="store_true",
        help="also run onnxruntime and onnx's ReferenceEvaluator and print one row per engine",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    outcomes = run_all()
    seconds = time.perf_counter() - start
    print(table(outcomes))
    print(f"({seconds:.1f} s, onnx {onnx.__version__})")
    if args.anchors:
        from tests.conformance.anchors import ENGINES, run_engine

        rows = {"xocview": (outcomes, seconds)}
        rows.update((engine, run_engine(engine)) for engine in ENGINES)
        print(engine_table(rows))
    if args.verbose:
        for name, o in outcomes.items():
            if o is not None:
                print(f"{name}  {o.kind}  {o.reason}")
    changed = differences(outcomes, read_expectations())
    if args.write_expectations:
        write_expectations(outcomes)
        print(f"wrote {EXPECTATIONS} ({len(changed)} changes)")
        return 0
    for line in changed:
        print(line)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
