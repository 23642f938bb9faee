"""A fixed slice of the attack families of issue 28 (``attacks.py``): a few cases of each.

Every case must end in success or a located one-line error within the time limit, print no raw
control character, read nothing outside its folder and leave every model's weights whole. A
family whose product fix has not landed is marked xfail (strict: the mark must go once it
passes). The long run is ``python tests/fuzz/run.py --attacks --cases 10000``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.fuzz.attack_targets import FORGED, control_problem
from tests.fuzz.attacks import FAMILIES, AttackCase, make_attack_case
from tests.fuzz.harness import Result, command, run_cases
from tests.fuzz.markers import SECRET, escape_problem, marker_bytes, plant, rearm
from tests.fuzz.outcomes import TIMEOUT as LONG_RUN_TIMEOUT

pytestmark = pytest.mark.fuzz

SLICE_SEED = 28
TIMEOUT = 8.0  # seconds per case here; the long run allows 20
FULL_TIMEOUT = LONG_RUN_TIMEOUT  # a full-size bomb (140k nodes in If bodies) gets the long run's
# Cases per family and the commands that meet its finding: the cheap families more, each bomb
# once or twice (a bomb not yet defused costs the whole time limit).
SHOWN = ("info", "run", "diff", "import-times", "check")
PER_FAMILY: dict[str, tuple[int, tuple[str, ...]]] = {
    "paths.external": (8, ("convert", "run", "api-run", "info")),
    "terminal.onnx": (3, SHOWN),
    "terminal.xoc": (2, SHOWN),
    "terminal.nnvm": (2, SHOWN),
    "terminal.lightnet": (2, SHOWN),
    "bomb.functions": (1, ("convert",)),
    "bomb.if_nest": (1, ("info",)),
    "bomb.scopes": (1, ("render",)),
    "bomb.loop": (2, ("run", "api-run")),
    "bomb.counts": (1, ("run",)),
    "bomb.xoc_groups": (1, ("render",)),
    "bomb.metadata_deep": (1, ("convert",)),
    "bomb.dotted_keys": (1, ("convert",)),
    "values.run": (4, ("run", "api-run")),
    "save.clobber": (2, ("convert-onnx",)),
    "save.kill": (3, ("convert-kill",)),
}
FULL_SIZE = ("bomb.functions", "bomb.if_nest", "bomb.loop")
# Families whose fix has not landed yet: the coordinator removes each as its fix lands.
OPEN: dict[str, str] = {}


def _cases() -> dict[str, list[AttackCase]]:
    cases = {}
    for fam, (n, targets) in PER_FAMILY.items():
        some = [make_attack_case(SLICE_SEED, i, [fam], targets) for i in range(n)]
        if fam in FULL_SIZE:  # the largest of the first few: the bomb at full size
            tries = [make_attack_case(SLICE_SEED, i, [fam], targets) for i in range(4)]
            biggest = max(tries, key=lambda c: len(c.mutant_at(Path("/tmp/x/case")).data))
            some = [biggest, *[c for c in some if c != biggest]][:n]
        cases[fam] = some
    return cases


@pytest.fixture(scope="module")
def results() -> dict[str, list[Result]]:
    """Every family's results, from one run of the slice on two workers."""
    cases = _cases()
    small = [c for f, cs in cases.items() if f not in FULL_SIZE for c in cs]
    full = [c for f, cs in cases.items() if f in FULL_SIZE for c in cs]
    done = run_cases(small, jobs=2, timeout=TIMEOUT)
    done += run_cases(full, jobs=2, timeout=FULL_TIMEOUT)
    return {f: [r for r in done if r.case.mutator == f] for f in cases}


def _explain(family: str, failed: Sequence[Result]) -> str:
    lines = [f"{len(failed)} of the {family} attack cases failed:"]
    for r in failed:
        index = int(r.case.case_id.rsplit("-", 1)[1])
        lines += [
            f"- {r.line()}",
            f"    ran: {command(r.case)}",
            f"    reproduce: python tests/fuzz/run.py --attacks --family {family} "
            + "".join(f"--target {t} " for t in PER_FAMILY[family][1])
            + f"--seed {SLICE_SEED} --start {index} --cases 1 --out fuzz-out",
        ]
    return "\n".join(lines)


@pytest.mark.parametrize(
    "family",
    [
        pytest.param(f, marks=pytest.mark.xfail(strict=True, reason=OPEN[f])) if f in OPEN else f
        for f in FAMILIES
    ],
)
def test_attack_family_is_refused_or_survived(
    family: str, results: dict[str, list[Result]]
) -> None:
    failed = [r for r in results[family] if r.failed]
    if failed:
        pytest.fail(_explain(family, failed), pytrace=False)


def test_attack_cases_are_the_same_on_every_run(tmp_path: Path) -> None:
    """A case is made again from its key alone: the reproducer commands depend on it."""
    folder = tmp_path / "case"
    for fam in FAMILIES:
        a, b = make_attack_case(3, 0, [fam]), make_attack_case(3, 0, [fam])
        assert a == b
        ma, mb = a.mutant_at(folder), b.mutant_at(folder)
        assert (ma.description, ma.data, ma.side_files, ma.links, ma.extra) == (
            mb.description, mb.data, mb.side_files, mb.links, mb.extra,
        )  # fmt: skip


def test_attack_slice_takes_every_family() -> None:
    assert set(PER_FAMILY) == set(FAMILIES)


def test_attack_mix_covers_every_family_and_command() -> None:
    cases = [make_attack_case(0, i) for i in range(2000)]
    assert {c.mutator for c in cases} == set(FAMILIES)
    for fam in FAMILIES:
        assert {c.target for c in cases if c.mutator == fam} == set(FAMILIES[fam].targets)


@pytest.mark.parametrize(
    "text",
    ["\x1b[2J", "a\x9b2Jb", "x\u202ey", "\r", "\x07", f"ok\n{FORGED}: error: forged", "\x7f"],
)
def test_terminal_screen_catches_takeovers(text: str) -> None:
    assert control_problem(f"name: {text}\n", "stdout") is not None


@pytest.mark.parametrize("text", ["plain\ttext\n", "\\x1b[2J", "é ü 名前", f"a {FORGED}"])
def test_terminal_screen_lets_safe_text_through(text: str) -> None:
    assert control_problem(text, "stdout") is None


def test_marker_sees_a_read_and_a_copy(tmp_path: Path) -> None:
    """The marker test must see a read (by atime) and the secret in a written file."""
    case = tmp_path / "case"
    case.mkdir()
    marker = plant(tmp_path)
    assert marker.read_bytes() == marker_bytes()  # (this read moves the atime too)
    rearm(marker)
    assert escape_problem(marker, case, []) is None
    with open(marker, "rb") as f:
        f.read(16)
    assert "was read" in str(escape_problem(marker, case, []))
    rearm(marker)
    (case / "out.onnx").write_bytes(b"head" + SECRET.encode() + b"tail")
    assert "out.onnx" in str(escape_problem(marker, case, []))
    assert escape_problem(marker, case, ["out.onnx"]) is None
    os.stat(marker)  # a stat is not a read
    assert escape_problem(marker, case, ["out.onnx"]) is None
