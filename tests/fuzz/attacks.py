"""The attack families of issue 28: whole hostile files made from a seed, one family a finding.

Unlike the mutators (damage to a seed file), an attack builds a file with hostile *meaning*:
external data naming files outside the folder, text that takes over a terminal, expansion and
nesting bombs, values no kernel takes, saves beside other models' data and saves killed half
way. Case ``index`` of fuzz seed ``s`` is made from ``random.Random(f"attack:{s}:{index}")``:
a family, a command it applies to, and the file, evenly mixed. ``run.py --attacks`` runs them;
``family_table`` reports them by family and command.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz import attack_bombs as bombs
from tests.fuzz.attack_base import Attack, Ctx
from tests.fuzz.attack_paths import external_paths, save_clobber, save_kill
from tests.fuzz.attack_text import terminal_json, terminal_onnx
from tests.fuzz.attack_values import hostile_values
from tests.fuzz.harness import ATTACK_TARGETS, OUTCOMES, Case, Result
from tests.fuzz.markers import MARKER
from tests.fuzz.mutators import Mutant
from tests.fuzz.seeds import Seed

__all__ = ["FAMILIES", "AttackCase", "Family", "family_table", "first_reasons", "make_attack_case"]

PRINTING = ("info", "check", "render", "run", "convert", "diff", "import-times")


@dataclass(frozen=True)
class Family:
    """An attack family: what it makes, its format and the commands it is run on."""

    name: str
    make: Attack
    fmt: str
    targets: tuple[str, ...] = ATTACK_TARGETS


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("paths.external", external_paths, "onnx"),
        Family("terminal.onnx", terminal_onnx, "onnx", PRINTING),
        Family("terminal.xoc", terminal_json("xoc"), "xoc", PRINTING),
        Family("terminal.nnvm", terminal_json("nnvm"), "nnvm", PRINTING),
        Family("terminal.lightnet", terminal_json("lightnet"), "lightnet", PRINTING),
        Family("bomb.functions", bombs.function_bomb, "onnx"),
        Family("bomb.if_nest", bombs.if_nest, "onnx"),
        Family("bomb.scopes", bombs.scopes_bomb, "onnx"),
        Family("bomb.loop", bombs.loop_trips, "onnx"),
        Family("bomb.counts", bombs.huge_counts, "onnx"),
        Family("bomb.xoc_groups", bombs.xoc_groups, "xoc"),
        Family("bomb.metadata_deep", bombs.metadata_deep, "mixed"),
        Family("bomb.dotted_keys", bombs.dotted_keys, "mixed"),
        Family("values.run", hostile_values, "onnx"),
        Family("save.clobber", save_clobber, "onnx", ("convert-onnx",)),
        Family("save.kill", save_kill, "onnx", ("convert-kill",)),
    )
}


@dataclass(frozen=True)
class AttackCase(Case):
    """A case of an attack family (``mutator`` is the family's name)."""

    def mutant(self) -> Mutant:
        return self.mutant_at(Path("/nonexistent/case"))

    def mutant_at(self, folder: Path) -> Mutant:
        ctx = Ctx(str(folder.parent.absolute() / MARKER))
        mutant = FAMILIES[self.mutator].make(random.Random(self.rng_key + ":attack"), ctx)
        mutant.extra["screen"] = True  # stdout and stderr screened for control characters
        return mutant

    @property
    def file_name(self) -> str:
        return "attack.onnx" if self.seed.fmt == "onnx" else "attack.json"


def make_attack_case(
    fuzz_seed: int,
    index: int,
    families: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
) -> AttackCase:
    """Attack case ``index``: a family, then one of its commands, both even by the rng."""
    rng_key = f"attack:{fuzz_seed}:{index}"
    rng = random.Random(rng_key)
    names = [
        n for n in (families or FAMILIES) if not targets or set(FAMILIES[n].targets) & set(targets)
    ]
    if not names:
        raise ValueError("no attack family runs on the targets asked for")
    family = FAMILIES[rng.choice(sorted(names))]
    target = rng.choice([t for t in family.targets if not targets or t in targets])
    seed = Seed(family.name, family.fmt, None)
    return AttackCase(f"a{fuzz_seed}-{index:06d}", seed, family.name, target, rng_key)


def family_table(results: Sequence[Result]) -> str:
    """Cases per family and command (rows) and outcome (columns seen), with totals."""
    counts = Counter((r.case.mutator, r.case.target, r.outcome) for r in results)
    seen = [o for o in OUTCOMES if any(k[2] == o for k in counts)]
    rows_keys = sorted({(f, t) for f, t, _ in counts})
    w = max(len(o) for o in [*seen, "total"]) + 1
    first = max([len("family"), *(len(f) for f, _ in rows_keys)]) + 1
    second = max([len("command"), *(len(t) for _, t in rows_keys)]) + 1
    head = f"{'family':<{first}}{'command':<{second}}" + "".join(f"{o:>{w}}" for o in seen)
    rows = [head + f"{'total':>{w}}", "-" * (len(head) + w)]
    last = None
    for fam, target in rows_keys:
        cells = [counts[fam, target, o] for o in seen]
        label = fam if fam != last else ""
        last = fam
        rows.append(
            f"{label:<{first}}{target:<{second}}"
            + "".join(f"{c or '.':>{w}}" for c in cells)
            + f"{sum(cells):>{w}}"
        )
    totals = [sum(n for (_, _, o), n in counts.items() if o == out) for out in seen]
    rows.append("-" * (len(head) + w))
    rows.append(
        f"{'total':<{first + second}}"
        + "".join(f"{c:>{w}}" for c in totals)
        + f"{sum(totals):>{w}}"
    )
    return "\n".join(rows)


def first_reasons(results: Sequence[Result]) -> str:
    """Per family with failures: how many, by outcome, and the first failing case's line."""
    out = []
    for fam in FAMILIES:
        failed = [r for r in results if r.case.mutator == fam and r.failed]
        if not failed:
            continue
        kinds = Counter(r.outcome for r in failed)
        out.append(
            f"{fam}: {len(failed)} failed ({', '.join(f'{k} {n}' for k, n in kinds.most_common())})"
        )
        out.append(f"    e.g. {failed[0].line()}")
    return "\n".join(out)
