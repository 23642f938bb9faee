"""The same conformance cases through onnxruntime and onnx's ReferenceEvaluator, judged by the
same comparison, for the side-by-side table of ``run.py --anchors``.

A session or evaluator that cannot be made (an op or type it lacks) counts as refused; a run
that raises counts as an error. Neither engine is a dependency of xocview: onnxruntime comes
from the test extra, the ReferenceEvaluator with onnx.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx

from tests.conformance.node_cases import (
    Errored,
    Expectation,
    NotApplicable,
    NotPassing,
    Refused,
    Wrong,
    cache_folder,
    case_names,
    compare_value,
    first_line,
    index,
    read_value,
)
from xocview.executor.optional import EMPTY

__all__ = ["ENGINES", "run_case_with", "run_engine"]

Runner = Callable[[list[Any]], list[Any]]


def _onnxruntime(model: onnx.ModelProto) -> Runner:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    session = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]

    def call(values: list[Any]) -> list[Any]:
        if any(v is None for v in values):
            raise Refused("an empty optional cannot be fed")
        return list(session.run(None, dict(zip(names, values, strict=False))))

    return call


def _reference(model: onnx.ModelProto) -> Runner:
    from onnx.reference import ReferenceEvaluator

    evaluator = ReferenceEvaluator(model)
    names = list(evaluator.input_names)

    def call(values: list[Any]) -> list[Any]:
        return list(evaluator.run(None, dict(zip(names, values, strict=False))))

    return call


ENGINES: dict[str, Callable[[onnx.ModelProto], Runner]] = {
    "onnxruntime": _onnxruntime,
    "reference": _reference,
}


def run_case_with(make: Callable[[onnx.ModelProto], Runner], name: str) -> None:
    """Return when the engine passes the case; else raise a NotPassing kind, as run_case."""
    entry = index()[name]
    folder = cache_folder() / name
    model = onnx.load(folder / "model.onnx")
    try:
        runner = make(model)
    except Exception as e:
        raise Refused(first_line(f"{type(e).__name__}: {e}")) from None
    outputs = [vi.name for vi in model.graph.output]
    for data_set in entry["data_sets"]:
        values = [read_value(folder / f) for f in data_set["inputs"]]
        expected = [read_value(folder / f) for f in data_set["outputs"]]
        if any(isinstance(v, dict | tuple) for v in [*values, *expected]):
            raise NotApplicable("a map value")
        try:
            got = runner(values)
        except NotPassing:
            raise
        except Exception as e:
            raise Errored(first_line(f"{type(e).__name__}: {e}")) from None
        for out, value, want in zip(outputs, got, expected, strict=False):
            value = EMPTY if value is None else value
            problem = compare_value(value, want)
            if problem:
                raise Wrong(f"output {out!r}: {problem}")


def run_engine(engine: str) -> tuple[dict[str, Expectation | None], float]:
    """Every case's outcome with ``engine``, and the seconds the whole sweep took."""
    make = ENGINES[engine]
    outcomes: dict[str, Expectation | None] = {}
    start = time.perf_counter()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for name in case_names():
            try:
                run_case_with(make, name)
                outcomes[name] = None
            except NotPassing as e:
                outcomes[name] = Expectation(e.kind, str(e))
    return outcomes, time.perf_counter() - start
