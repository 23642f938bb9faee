"""Loops that would never end: refused when their declared work cannot finish, otherwise
shown iteration by iteration and stopped at once by Cancel or Ctrl+C."""

from __future__ import annotations

import _thread
import gc
import signal
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.errors import RunError
from xocview.executor import bound_body, run
from xocview.executor.plan import make_plan
from xocview.formats import load

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
INT64_MAX = 2**63 - 1


def _save(tmp_path: Path, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> Path:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [1])],
        [helper.make_tensor_value_info("y", F, [1])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "loop.onnx"
    onnx.save(model, path)
    return path


def counting_loop(
    tmp_path: Path,
    trip_count: int | None,
    condition: str = "passed",
    start: bool = True,
    stop_at: float = 10.0,
) -> Path:
    """Loop 'loop1' adding 1 to x per iteration; its body's condition is ``passed`` (the
    condition passed through), ``outer`` (an outer tensor), ``not`` (Not of the condition),
    ``less`` (acc < stop_at) or ``random`` (a random draw < 0.5)."""
    body_nodes = [helper.make_node("Add", ["acc_in", "one"], ["acc_out"], name="add")]
    made = {
        "passed": helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
        "outer": helper.make_node("Identity", ["go"], ["cond_out"], name="keep"),
        "not": helper.make_node("Not", ["cond_in"], ["cond_out"], name="flip"),
        "less": helper.make_node("Less", ["acc_out", "stop"], ["cond_out"], name="less"),
        "random": helper.make_node("RandomUniform", [], ["draw"], name="draw", shape=[1]),
    }
    body_nodes.append(made[condition])
    if condition == "random":
        body_nodes.append(helper.make_node("Less", ["draw", "half"], ["cond_out"], name="less"))
    body = helper.make_graph(
        body_nodes,
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            helper.make_tensor_value_info("acc_in", F, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", B, None),
            helper.make_tensor_value_info("acc_out", F, [1]),
        ],
        [
            numpy_helper.from_array(np.array([1.0], np.float32), "one"),
            numpy_helper.from_array(np.array([stop_at], np.float32), "stop"),
            numpy_helper.from_array(np.array([0.5], np.float32), "half"),
        ],
    )
    inits = [
        numpy_helper.from_array(np.array(start), "c"),
        numpy_helper.from_array(np.array(True), "go"),
    ]
    if trip_count is not None:
        inits.append(numpy_helper.from_array(np.array(trip_count, np.int64), "M"))
    loop = helper.make_node(
        "Loop", ["M" if trip_count is not None else "", "c", "x"], ["y"], name="loop1", body=body
    )
    return _save(tmp_path, [loop], inits)


X0 = {"x": np.zeros(1, np.float32)}


def test_a_trip_count_of_10_15_with_a_fixed_condition_is_refused_at_once(
    tmp_path: Path,
) -> None:
    graph = load(counting_loop(tmp_path, 10**15))
    start = time.perf_counter()
    with pytest.raises(RunError) as info:
        run(graph, X0)
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert info.value.node_id == "loop1"
    assert message.startswith("node 'loop1' (Loop): trip count 1,000,000,000,000,000 with a")
    assert "expected a trip count of at most 50,000,000, or a condition that ends" in message


@pytest.mark.parametrize("condition", ["passed", "outer"])
def test_a_loop_with_no_trip_count_and_a_fixed_condition_would_never_end(
    tmp_path: Path, condition: str
) -> None:
    with pytest.raises(RunError, match=r"node 'loop1' \(Loop\): no trip count.*never end"):
        run(load(counting_loop(tmp_path, None, condition)), X0)


def test_int64_max_with_a_condition_that_ends_the_loop_runs(tmp_path: Path) -> None:
    """torch's exports: M = INT64_MAX and a condition computed in the body."""
    result = run(load(counting_loop(tmp_path, INT64_MAX, "less")), X0, repeat=2)
    np.testing.assert_array_equal(result.outputs["y"], [10.0])


@pytest.mark.parametrize(("condition", "start", "y"), [("not", True, 1.0), ("passed", False, 0)])
def test_a_fixed_condition_that_stops_the_loop_is_not_refused(
    tmp_path: Path, condition: str, start: bool, y: float
) -> None:
    result = run(load(counting_loop(tmp_path, 10**15, condition, start)), X0)
    np.testing.assert_array_equal(result.outputs["y"], [y])


def test_a_small_trip_count_with_a_fixed_condition_runs_it_out(tmp_path: Path) -> None:
    result = run(load(counting_loop(tmp_path, 1000)), X0)
    np.testing.assert_array_equal(result.outputs["y"], [1000.0])


def test_a_random_condition_can_end_the_loop_so_it_is_not_refused(tmp_path: Path) -> None:
    result = run(load(counting_loop(tmp_path, 10**15, "random")), X0)
    assert result.outputs["y"][0] >= 1.0


def test_cancel_from_another_thread_stops_a_long_loop_within_a_second(tmp_path: Path) -> None:
    graph = load(counting_loop(tmp_path, INT64_MAX, "less", stop_at=1e30))
    flag = threading.Event()
    fired: list[float] = []

    def cancel() -> None:
        fired.append(time.monotonic())
        flag.set()

    timer = threading.Timer(0.5, cancel)
    timer.start()
    try:
        result = run(graph, X0, cancel=flag.is_set)
    finally:
        timer.cancel()
    assert result.cancelled
    assert time.monotonic() - fired[0] < 1.0


def test_cancel_stops_a_loop_folded_as_a_constant(tmp_path: Path) -> None:
    """Every input a weight: the loop runs once before the timed passes, still cancellable."""
    model = onnx.load(counting_loop(tmp_path, INT64_MAX, "less", stop_at=1e30))
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(1, np.float32), "z"))
    model.graph.node[0].input[2] = "z"  # x stays an input, read by nothing
    onnx.save(model, tmp_path / "folded.onnx")
    graph = load(tmp_path / "folded.onnx")
    assert [s.node_id for s in make_plan(graph).folded] == ["loop1"]
    calls: list[int] = []
    result = run(graph, X0, cancel=lambda: calls.append(1) or len(calls) > 100)
    assert result.cancelled
    assert result.folded == []  # stopped inside it


def _loop_around_an_inner_loop(
    tmp_path: Path, inner_trips: int, inner_inputs: list[str], outer_trips: str
) -> onnx.NodeProto:
    """Loop 'outer' (trip count from tensor ``outer_trips``, condition 'c') whose body passes
    its condition through and runs Loop 'inner' (counting_loop's, on ``inner_inputs``)."""
    inner = onnx.load(counting_loop(tmp_path, inner_trips)).graph.node[0]
    inner.name = "inner"
    inner.input[:] = inner_inputs
    inner.output[:] = ["acc_out"]
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"), inner],
        "outer_body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", B, []),
            helper.make_tensor_value_info("acc_in", F, [1]),
        ],
        [
            helper.make_tensor_value_info("cond_out", B, None),
            helper.make_tensor_value_info("acc_out", F, [1]),
        ],
    )
    return helper.make_node("Loop", [outer_trips, "c", "x"], ["y"], name="outer", body=body)


def test_an_inner_loop_that_cannot_finish_is_named(tmp_path: Path) -> None:
    outer = _loop_around_an_inner_loop(tmp_path, 10**15, ["M", "c", "acc_in"], "three")
    inits = [
        numpy_helper.from_array(np.array(3, np.int64), "three"),
        numpy_helper.from_array(np.array(10**15, np.int64), "M"),
        numpy_helper.from_array(np.array(True), "c"),
    ]
    with pytest.raises(RunError) as info:
        run(load(_save(tmp_path, [outer], inits)), X0)
    assert info.value.node_id == "inner"
    assert str(info.value).startswith("node 'inner' (Loop): trip count 1,000,000,000,000,000")


def test_an_outer_loop_that_passes_its_condition_is_refused_before_its_first_iteration(
    tmp_path: Path,
) -> None:
    """The outer loop gives its condition back unchanged: it would run 2^63-1 times, so it is
    refused before the inner loop's 10^6 iterations of its first pass are started."""
    outer = _loop_around_an_inner_loop(tmp_path, 10**6, ["N", "cond_in", "acc_in"], "M")
    inits = [
        numpy_helper.from_array(np.array(INT64_MAX, np.int64), "M"),
        numpy_helper.from_array(np.array(10**6, np.int64), "N"),
        numpy_helper.from_array(np.array(True), "c"),
    ]
    graph = load(_save(tmp_path, [outer], inits))
    start = time.perf_counter()
    with pytest.raises(RunError) as info:
        run(graph, X0)
    assert time.perf_counter() - start < 2.0
    assert info.value.node_id == "outer"
    assert "cannot change between iterations" in str(info.value)


def test_ctrl_c_stops_a_long_loop_at_once(tmp_path: Path) -> None:
    """Ctrl+C is pressed every 0.2 s from 0.5 s on: an interrupt that lands in a finalizer is
    swallowed by Python itself (seen in the full suite), the next must stop the run. The trip
    count is finite so that a failure ends (in about a minute) rather than hangs."""
    graph = load(counting_loop(tmp_path, 3_000_000, "less", stop_at=1e30))
    fired: list[float] = []
    done = threading.Event()
    # A shell without job control starts background jobs with SIGINT ignored, and Python then
    # leaves it ignored: interrupt_main() does nothing. The test wants Ctrl+C as in a terminal.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt() -> None:
        time.sleep(0.5)
        while not done.is_set() and len(fired) < 50:
            fired.append(time.monotonic())
            _thread.interrupt_main()
            done.wait(0.2)

    presser = threading.Thread(target=interrupt, daemon=True)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(graph, X0)
    finally:
        done.set()
        presser.join()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - fired[0] < 1.0
    assert gc.isenabled()  # the run's pause of the collector ended with it


def test_iterations_are_reported_from_inside_the_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bound_body, "REPORT_SECONDS", 0.0)
    reports: list[tuple[str, int, int | None]] = []
    graph = load(counting_loop(tmp_path, INT64_MAX, "less", stop_at=1e30))
    result = run(graph, X0, cancel=lambda: len(reports) >= 50, on_iteration=_keep(reports))
    assert result.cancelled
    assert [r[0] for r in reports] == ["loop1"] * 50
    assert [r[1] for r in reports] == list(range(1, 51))
    assert {r[2] for r in reports} == {None}  # INT64_MAX: the condition decides


def test_a_scan_reports_how_many_iterations_it_will_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bound_body, "REPORT_SECONDS", 0.0)
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "v"], ["s_out"], name="add")],
        "body",
        [helper.make_tensor_value_info("s_in", F, [1]), helper.make_tensor_value_info("v", F, [1])],
        [helper.make_tensor_value_info("s_out", F, [1])],
    )
    scan = helper.make_node("Scan", ["x", "seq"], ["y"], name="scan1", body=body, num_scan_inputs=1)
    seq = numpy_helper.from_array(np.ones((300, 1), np.float32), "seq")
    reports: list[tuple[str, int, int | None]] = []
    result = run(load(_save(tmp_path, [scan], [seq])), X0, on_iteration=_keep(reports))
    np.testing.assert_array_equal(result.outputs["y"], [300.0])
    assert reports[-1] == ("scan1", 300, 300)
    assert len(reports) == 300


def _keep(reports: list[tuple[str, int, int | None]]) -> bound_body.Iteration:
    return lambda node_id, done, total: reports.append((node_id, done, total))
