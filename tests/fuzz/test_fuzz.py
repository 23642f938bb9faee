"""A fixed-seed fuzz slice: ~300 damaged files on every CLI command and the Python API.

Every case must end in success or a located one-line error, within 20 s and 2 GB. The cases
run once for the module on two long-lived workers; each format's test lists its failing cases
with the command that reproduces them (``tests/fuzz/run.py`` writes the file with ``--out``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.fuzz.harness import (
    Case,
    Result,
    Worker,
    command,
    make_case,
    run_cases,
    special_cases,
)
from tests.fuzz.seeds import FORMATS, SHARED_CORPUS, suite_seeds

pytestmark = pytest.mark.fuzz

FUZZ_SEED = 14
# + 49 special files: ~430 cases
CASES = {
    "xoc": 70,
    "nnvm": 60,
    "lightnet": 60,
    "onnx": 70,
    "safetensors": 24,
    "pytorch": 40,
    "tflite": 24,
    "keras": 30,
    "tensorflow": 24,
    "gguf": 24,
}
JOBS = 2


def _cases() -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {}
    for fmt, n in CASES.items():
        seeds = suite_seeds(fmt)
        if seeds:
            cases[fmt] = [make_case(FUZZ_SEED, i, seeds) for i in range(n)]
    cases["special"] = special_cases(suite_seeds())
    return cases


@pytest.fixture(scope="module")
def results() -> dict[str, list[Result]]:
    """Every group's results, from one run of all cases (the workers start once)."""
    cases = _cases()
    done = run_cases([c for group in cases.values() for c in group], jobs=JOBS)
    by_id = {r.case.case_id + r.case.seed.fmt: r for r in done}
    return {g: [by_id[c.case_id + c.seed.fmt] for c in cs] for g, cs in cases.items()}


def _explain(group: str, failed: Sequence[Result]) -> str:
    lines = [f"{len(failed)} of the {group} fuzz cases failed:"]
    for r in failed:
        lines.append(f"- {r.line()}")
        lines.append(f"    ran: {command(r.case)}")
        if r.verdict.get("traceback"):
            lines += ["    | " + ln for ln in str(r.verdict["traceback"]).splitlines()[-3:]]
        if group == "special":
            lines.append(f"    reproduce: make FILE {r.description.split(': ', 1)[-1]}")
        else:
            index = int(r.case.case_id.rsplit("-", 1)[1])
            lines.append(
                f"    reproduce: python tests/fuzz/run.py --suite --format {group} "
                f"--seed {FUZZ_SEED} --start {index} --cases 1 --out fuzz-out"
            )
    return "\n".join(lines)


@pytest.mark.parametrize("group", [*FORMATS, "special"])
def test_fuzz_cases_end_in_success_or_a_located_error(
    group: str, results: dict[str, list[Result]]
) -> None:
    if group not in results:
        pytest.skip(f"no {group} seed files (the corpus is read from {SHARED_CORPUS})")
    failed = [r for r in results[group] if r.failed]
    if failed:
        pytest.fail(_explain(group, failed), pytrace=False)


def test_fuzz_slice_covers_every_target_and_format(results: dict[str, list[Result]]) -> None:
    """The slice is a real sample: every target is hit, and most cases get past the reader."""
    every = [r for rs in results.values() for r in rs]
    assert {r.case.target for r in every} == {
        "info", "check", "render", "run", "api-load", "api-check", "api-run",
    }  # fmt: skip
    assert sum(r.outcome == "ok" for r in every) >= len(every) // 10


@pytest.mark.parametrize(
    ("behaviour", "outcome"),
    [
        ("hang", "hang"),
        ("spin", "hang"),
        ("memory", "memory"),
        ("crash", "crash"),
        ("internal", "internal"),
        ("message", "message"),
    ],
)
def test_harness_catches_each_kind_of_failure(behaviour: str, outcome: str, tmp_path: Path) -> None:
    """The parent must see a hang, a memory blow-up and a crash, and survive them."""
    worker = Worker(tmp_path, preload=False)
    try:
        spec = {"target": f"selftest:{behaviour}", "path": "f.json", "out": str(tmp_path)}
        verdict = worker.run(spec, timeout=1.0 if outcome == "hang" else 15.0, mem_mb=400)
        assert verdict["outcome"] == outcome, verdict
        after = worker.run({**spec, "target": "selftest:internal"}, timeout=10.0, mem_mb=400)
        assert after["outcome"] == "internal", after  # a fresh worker took over
    finally:
        worker.stop()


def test_cases_are_the_same_on_every_run() -> None:
    """A case is made again from its seed alone: the reproducer commands depend on it."""
    seeds = suite_seeds()
    first = [make_case(FUZZ_SEED, i, seeds) for i in range(40)]
    again = [make_case(FUZZ_SEED, i, seeds) for i in range(40)]
    assert first == again
    for a, b in zip(first, again, strict=True):
        ma, mb = a.mutant(), b.mutant()
        assert (ma.description, ma.data, ma.special) == (mb.description, mb.data, mb.special)
