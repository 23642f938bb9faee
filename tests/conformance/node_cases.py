"""Run one ONNX node conformance case through xocview and say how it went.

Shared by the pytest module and run.py so that the table run.py writes and the verdicts the
tests expect come from the same code. A case that does not pass raises one of four
``NotPassing`` kinds, so that a strict xfail can name the kind it expects (``raises=``): a
refused case that starts to crash fails the build as surely as one that starts to pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from tests.conformance.generate import INDEX, default_cache, generate, read_value
from xocview.errors import FormatError, RunError
from xocview.executor import run
from xocview.executor.optional import Empty
from xocview.formats import load

RTOL, ATOL = 1e-3, 1e-4
# A bfloat16 output is compared within two of its ulps (2**-7 each), as onnx's own backend test
# runner does (onnx.backend.test.runner, assert_similar_outputs): 1e-3 is finer than the type
# can tell apart, so any other order of the same float operations would fail.
BFLOAT16_RTOL = 2**-6
EXPECTATIONS = Path(__file__).with_name("expectations.txt")
REASON_LIMIT = 140


class NotPassing(Exception):
    """A case that did not pass; ``kind`` is the word expectations.txt uses."""

    kind = ""


class Refused(NotPassing):
    """The loader or executor declined cleanly, naming the op, attribute or dtype."""

    kind = "refused"


class Wrong(NotPassing):
    """The run finished and an output differs (value, shape or dtype)."""

    kind = "wrong"


class Errored(NotPassing):
    """Anything else: a kernel crashed (TypeError, IndexError, ...) or an unexpected exception."""

    kind = "error"


class NotApplicable(NotPassing):
    """Map or sparse values, which the runtime has no values for."""

    kind = "na"


KINDS: dict[str, type[NotPassing]] = {k.kind: k for k in (Refused, Wrong, Errored, NotApplicable)}


@dataclass(frozen=True)
class Expectation:
    kind: str
    reason: str


@cache
def cache_folder() -> Path:
    """The cache for the installed onnx, written on first use (checked once a process)."""
    return generate(default_cache())


@cache
def index() -> dict[str, Any]:
    return json.loads((cache_folder() / INDEX).read_text())["cases"]


def case_names() -> list[str]:
    return sorted(index())


def first_line(text: str, limit: int = REASON_LIMIT) -> str:
    """One line of at most ``limit`` characters: expectations.txt keeps a line per case. The
    input shapes and the count of supported ops are cut, so that adding a kernel does not
    rewrite every other line."""
    line = " ".join(text.strip().splitlines()[:1]).replace("\t", " ") or "(no message)"
    line = re.sub(r"; \d+ ops are supported", "", re.sub(r"; inputs: .*$", "", line))
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _non_tensor_io(model: onnx.ModelProto) -> str | None:
    """The first graph input or output whose type the runtime has no values for (maps,
    sparse tensors), described; tensors, sequences and optionals run."""
    for vi in [*model.graph.input, *model.graph.output]:
        which = vi.type.WhichOneof("value")
        if which not in ("tensor_type", "sequence_type", "optional_type", None):
            return f"{vi.name!r}: {which.removesuffix('_type')} type, not a tensor"
    return None


def _refusal(e: RunError) -> bool:
    """A RunError is a clean refusal when the executor raised it itself (no kernel, attribute
    or dtype it does not take), or a kernel said so with NotImplementedError or a ValueError
    that says "not supported"; a wrapped TypeError, IndexError, ... is a crash."""
    cause = e.__cause__
    if cause is None or isinstance(cause, RunError | NotImplementedError):
        return True
    return isinstance(cause, ValueError) and "not supported" in str(cause)


def run_case(name: str) -> None:
    """Return when every output of every data set matches; else raise a NotPassing kind."""
    entry = index()[name]
    folder = cache_folder() / name
    model_path = folder / "model.onnx"
    model = onnx.load(model_path, load_external_data=False)
    problem = _non_tensor_io(model)
    if problem:
        raise NotApplicable(problem)
    try:
        graph = load(model_path)
    except FormatError as e:
        raise Refused(f"load: {e}") from None
    except Exception as e:
        raise Errored(f"load: {type(e).__name__}: {e}") from e
    inputs = [vi.name for vi in model.graph.input]
    outputs = [vi.name for vi in model.graph.output]
    for data_set in entry["data_sets"]:
        values = [read_value(folder / f) for f in data_set["inputs"]]
        expected = [read_value(folder / f) for f in data_set["outputs"]]
        for v in [*values, *expected]:
            if isinstance(v, dict | tuple):
                raise NotApplicable(f"a value is a {type(v).__name__}")
        feeds = {
            k: v if v is None or isinstance(v, list) else np.asarray(v)
            for k, v in zip(inputs, values, strict=False)
        }
        try:
            result = run(graph, feeds)
        except RunError as e:
            if _refusal(e):
                raise Refused(str(e)) from None  # short: pytest formats each xfail's chain
            raise Errored(str(e)) from e
        except Exception as e:
            raise Errored(f"{type(e).__name__}: {e}") from e
        drawn = _unseeded_draw(model)
        for out, want in zip(outputs, expected, strict=True):
            if out not in result.outputs:
                raise Wrong(f"output {out!r} is missing")
            if drawn:  # values are a fresh draw on both sides: only their kind can agree
                problem = compare_kind(result.outputs[out], want)
            else:
                problem = compare_value(result.outputs[out], want)
            if problem:
                raise Wrong(f"output {out!r}: {problem}")


_RANDOM_OPS = frozenset(
    {
        "Bernoulli",
        "RandomUniform",
        "RandomUniformLike",
        "RandomNormal",
        "RandomNormalLike",
        "Multinomial",
    }
)


def _unseeded_draw(model: onnx.ModelProto) -> bool:
    """Whether the case draws random values without a seed (its node, or a node of its
    function expansion): its expected output is one draw of ONNX's reference, which no other
    draw equals but by chance (ten Bernoulli values agree about one run in sixty)."""
    nodes = [*model.graph.node, *(n for f in model.functions for n in f.node)]
    return any(
        n.op_type in _RANDOM_OPS and not any(a.name == "seed" for a in n.attribute) for n in nodes
    )


def compare_kind(got: Any, want: Any) -> str | None:
    """Shape, dtype and, for values drawn from {0, 1} (Bernoulli), that ours are too."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != {want.dtype}"
    if np.isin(want, (0, 1)).all() and not np.isin(got, (0, 1)).all():
        return "values other than 0 and 1"
    return None


def compare_value(got: Any, want: Any) -> str | None:
    """``compare`` for any value: a sequence element by element, an empty optional (None in
    the data sets, EMPTY in a run) only equal to another."""
    if want is None:
        return None if isinstance(got, Empty) else f"a {type(got).__name__}, expected nothing"
    if isinstance(want, list):
        if not isinstance(got, list):
            return f"a {type(got).__name__}, expected a sequence"
        if len(got) != len(want):
            return f"a sequence of {len(got)}, expected {len(want)}"
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            problem = compare(g, np.asarray(w))
            if problem:
                return f"element {k}: {problem}"
        return None
    if isinstance(got, list | Empty):
        return f"a {type(got).__name__}, expected a tensor"
    return compare(got, np.asarray(want))


def _is_text(a: np.ndarray) -> bool:
    return a.dtype.kind in "US" or (a.dtype.kind == "O" and all(isinstance(x, str) for x in a.flat))


def compare(got: Any, want: np.ndarray) -> str | None:
    """None when ``got`` equals ``want``: same shape, same dtype (strings may be object or
    unicode arrays), floats within rtol 1e-3/atol 1e-4 with NaN equal to NaN, the rest exact."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if _is_text(want):
        if not _is_text(got):
            return f"dtype {got.dtype}, expected strings"
        return None if got.tolist() == want.tolist() else "strings differ"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind in "fcV":  # V: the ml_dtypes floats (bfloat16, float8, ...)
        g, w = _floats(got), _floats(want)
        rtol = max(RTOL, BFLOAT16_RTOL) if want.dtype.name == "bfloat16" else RTOL
        close = np.isclose(g, w, rtol=rtol, atol=ATOL, equal_nan=True)
        if close.all():
            return None
        bad = int(np.argmax(~close.ravel()))
        return f"{int((~close).sum())}/{close.size} differ, e.g. {g.flat[bad]} vs {w.flat[bad]}"
    equal = got == want
    if np.all(equal):
        return None
    return f"{int((~np.asarray(equal)).sum())}/{want.size} differ"


def _floats(a: np.ndarray) -> np.ndarray:
    return a if a.dtype.kind == "c" else a.astype(np.float64)


def read_expectations(path: Path = EXPECTATIONS) -> dict[str, Expectation]:
    """``case  kind  reason`` lines; blank lines and ``#`` comments are skipped."""
    out: dict[str, Expectation] = {}
    if not path.exists():
        return out
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, kind, reason = ([*line.split(maxsplit=2), ""])[:3]
        if kind not in KINDS:
            raise ValueError(f"{path}: {name}: unknown kind {kind!r}")
        out[name] = Expectation(kind, reason)
    return out


def outcome(name: str) -> Expectation | None:
    """None for a pass, else the kind and the reason of the first line."""
    try:
        run_case(name)
    except NotPassing as e:
        return Expectation(e.kind, first_line(str(e)))
    return None
