"""Tables and groupings of fuzz results: cases per target and outcome, failures by cause."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from tests.fuzz.harness import ALL_TARGETS, OUTCOMES, Result

__all__ = ["cause", "failure_report", "mutator_table", "summary_table"]


def summary_table(results: Sequence[Result]) -> str:
    """Cases per target (rows) and outcome (columns), with a total row."""
    counts = Counter((r.case.target, r.outcome) for r in results)
    width = max(len(o) for o in OUTCOMES) + 1
    head = f"{'target':<10}" + "".join(f"{o:>{width}}" for o in OUTCOMES) + f"{'total':>{width}}"
    rows = [head, "-" * len(head)]
    for target in [*(t for t in ALL_TARGETS if any(r.case.target == t for r in results)), "total"]:
        cells = [
            sum(n for (t, o), n in counts.items() if o == outcome and target in (t, "total"))
            for outcome in OUTCOMES
        ]
        rows.append(
            f"{target:<10}" + "".join(f"{c:>{width}}" for c in cells) + f"{sum(cells):>{width}}"
        )
    return "\n".join(rows)


def mutator_table(results: Sequence[Result]) -> str:
    """Cases per mutator and outcome: which damage gets past the readers, and what it breaks."""
    counts = Counter((r.case.mutator, r.outcome) for r in results)
    names = sorted({r.case.mutator for r in results})
    width = max(len(o) for o in OUTCOMES) + 1
    first = max(len(n) for n in [*names, "mutator"]) + 1
    rows = [f"{'mutator':<{first}}" + "".join(f"{o:>{width}}" for o in OUTCOMES)]
    rows.append("-" * len(rows[0]))
    for name in names:
        cells = "".join(f"{counts[name, o]:>{width}}" for o in OUTCOMES)
        rows.append(f"{name:<{first}}{cells}")
    return "\n".join(rows)


_NOISE = (
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),
    (re.compile(r"\d+"), "N"),
    (re.compile(r"/\S+"), "PATH"),
)


def cause(result: Result) -> str:
    """A key that groups failures with the same cause: the broken spot, or the reason's shape."""
    v = result.verdict
    if result.outcome in ("hang", "memory", "crash", "control", "escaped", "clobbered", "torn"):
        return f"{result.outcome}: {result.case.mutator} on {result.case.target}"
    where = v.get("where")
    reason = str(v.get("reason", ""))
    kind = reason.split(":", 1)[0] if result.outcome == "internal" else ""
    if result.outcome == "internal" and "exit 3: xocview: internal error: " in reason:
        kind = reason.split("internal error: ", 1)[1].split(":", 1)[0]
    if where:
        return f"{result.outcome}: {kind} at {where}"
    text = reason.replace("xocview: error: ", "")
    if result.outcome == "missed":
        text = text.split("onnx.checker: ", 1)[-1]
    if result.outcome == "leaked":  # one bug whatever node or kernel shows it
        text = re.sub(r"node '[^']*' \([^)]*\): ", "", text.split(";")[0])
        text = re.sub(r"\w+\(\)", "f()", text)
    for pattern, repl in _NOISE:
        text = pattern.sub(repl, text)
    return f"{result.outcome}: {text[:100]}"


def failure_report(results: Sequence[Result], *, examples: int = 1) -> str:
    """Every failing (and leaked) case grouped by cause, with a reproducer per group."""
    groups: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        if r.failed or r.outcome in ("leaked", "missed"):
            groups[cause(r)].append(r)
    out: list[str] = []
    for key, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        targets = Counter(r.case.target for r in rs)
        mutators = Counter(r.case.mutator for r in rs)
        out.append(f"[{len(rs)}] {key}")
        out.append(f"    targets: {dict(targets)}; mutators: {dict(mutators.most_common(5))}")
        for r in rs[:examples]:
            out.append(f"    e.g. {r.line()}")
            tb = r.verdict.get("traceback")
            if tb:
                out.extend("      | " + ln for ln in str(tb).splitlines()[-4:])
    return "\n".join(out)
