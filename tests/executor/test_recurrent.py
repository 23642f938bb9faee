"""LSTM, GRU and RNN kernels against onnxruntime: directions, optional inputs, options, dtypes."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

from tests.executor.ort_reference import check_op, ort, ort_run, ours
from xocview.executor.ops.recurrent_common import reverse_flags
from xocview.executor.registry import lookup

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OUTPUTS = {"LSTM": 3, "GRU": 2, "RNN": 2}
DIRECTIONS = ["forward", "reverse", "bidirectional"]
STEPS, INPUT, HIDDEN = 5, 4, 3


def make_inputs(
    op: str,
    *,
    direction: str = "forward",
    batch: int = 3,
    dtype: type = np.float32,
    bias: bool = False,
    initial: bool = False,
    peepholes: bool = False,
    lens: list[int] | None = None,
    layout: int = 0,
    steps: int = STEPS,
    hidden: int = HIDDEN,
    seed: int = 0,
) -> list[np.ndarray | None]:
    """Inputs in ONNX order, trailing omitted ones dropped; drawn in float32 for every dtype."""
    rng = np.random.default_rng(seed)
    d, g = (2 if direction == "bidirectional" else 1), GATES[op]

    def draw(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)

    x = draw(batch, steps, INPUT) if layout else draw(steps, batch, INPUT)
    state = (lambda: draw(batch, d, hidden)) if layout else (lambda: draw(d, batch, hidden))
    inputs: list[np.ndarray | None] = [
        x,
        draw(d, g * hidden, INPUT, scale=0.6),
        draw(d, g * hidden, hidden, scale=0.6),
        draw(d, 2 * g * hidden, scale=0.5) if bias else None,
        None if lens is None else np.array(lens, np.int32),
        state() if initial else None,
    ]
    if op == "LSTM":
        inputs += [state() if initial else None, draw(d, 3 * hidden) if peepholes else None]
    while inputs[-1] is None:
        inputs.pop()
    return inputs


def short_lens(batch: int, *, allow_empty: bool = True) -> list[int]:
    """Sequence lengths, some shorter than the sequence (and one empty where ort allows it)."""
    return [2] if batch == 1 else [STEPS, 2, 0 if allow_empty else 1]


def with_hidden(attrs: dict[str, Any], inputs: list[np.ndarray | None]) -> dict[str, Any]:
    """The attributes with hidden_size, which onnxruntime requires (our kernels read R's shape)."""
    r = inputs[2]
    assert r is not None
    return {"hidden_size": r.shape[-1], **attrs}


def check(
    op: str,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any],
    *,
    opset: int = 17,
    num_outputs: int | None = None,
) -> None:
    """check_op, except for float64: onnxruntime's CPU provider has no double LSTM, GRU or RNN.

    Our float64 result is then held against ort's float32 run on the same values (the inputs
    are drawn in float32, so only the arithmetic's precision differs).
    """
    n = OUTPUTS[op] if num_outputs is None else num_outputs
    attrs = with_hidden(attrs, inputs)
    if inputs[0] is None or inputs[0].dtype != np.float64:
        check_op(op, inputs, attrs, opset=opset, num_outputs=n)
        return
    as32 = [a if a is None or a.dtype != np.float64 else a.astype(np.float32) for a in inputs]
    expected = ort_run(op, as32, attrs, opset=opset, num_outputs=n)
    got = ours(op, inputs, attrs, opset=opset, num_outputs=n)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == np.float64 and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


# The optional inputs each case gives (peepholes only mean something to LSTM).
VARIANTS: dict[str, dict[str, Any]] = {
    "bare": {},
    "bias+initial": {"bias": True, "initial": True},
    "peepholes": {"bias": True, "peepholes": True},
    "lens": {"bias": True, "initial": True, "lens": True},
    "lens-no-initial": {"lens": True},
}


def _case(op: str, variant: str, direction: str, batch: int, dtype: type) -> list[Any]:
    spec: dict[str, Any] = dict(VARIANTS[variant])
    if spec.pop("lens", False):
        spec["lens"] = short_lens(batch, allow_empty=op != "RNN")
    if op != "LSTM":
        spec.pop("peepholes", None)
    return make_inputs(op, direction=direction, batch=batch, dtype=dtype, **spec)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_lstm(direction: str, variant: str, batch: int, dtype: type) -> None:
    inputs = _case("LSTM", variant, direction, batch, dtype)
    check("LSTM", inputs, {"hidden_size": HIDDEN, "direction": direction})


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("variant", ["bare", "bias+initial", "lens", "lens-no-initial"])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_gru(
    direction: str, variant: str, linear_before_reset: int, batch: int, dtype: type
) -> None:
    inputs = _case("GRU", variant, direction, batch, dtype)
    attrs = {"direction": direction, "linear_before_reset": linear_before_reset}
    check("GRU", inputs, attrs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("variant", ["bare", "bias+initial", "lens", "lens-no-initial"])
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_rnn(direction: str, variant: str, batch: int, dtype: type) -> None:
    inputs = _case("RNN", variant, direction, batch, dtype)
    check("RNN", inputs, {"hidden_size": HIDDEN, "direction": direction})


OPTIONS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("LSTM", {"input_forget": 1}, {"bias": True, "initial": True}),
    ("LSTM", {"input_forget": 1}, {"bias": True, "peepholes": True, "lens": [5, 3]}),
    ("GRU", {"clip": 0.5}, {"bias": True, "initial": True}),
    ("GRU", {"clip": 0.5, "linear_before_reset": 1}, {"bias": True, "lens": [4, 5]}),
    ("RNN", {"clip": 0.4}, {"bias": True, "initial": True, "lens": [1, 5]}),
]  # LSTM's clip is held to the spec below: onnxruntime leaves h's input unclipped


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize(("op", "attrs", "spec"), OPTIONS)
def test_options(op: str, attrs: dict[str, Any], spec: dict[str, Any], direction: str) -> None:
    batch = len(spec.get("lens", [0, 0]))
    inputs = make_inputs(op, direction=direction, batch=batch, **spec)
    check(op, inputs, {**attrs, "direction": direction})


def lstm_by_the_spec(
    inputs: list[np.ndarray | None], d: int, backwards: bool, clip: float | None, input_forget: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Direction d of a full-length LSTM, one batch row at a time, in the spec's own equations
    (default activations, float64): Y (steps, batch, hidden), final H and C (batch, hidden)."""
    x, w, r, b, _, h0, c0, p = (None if a is None else a.astype(np.float64) for a in inputs)
    assert x is not None and w is not None and r is not None and b is not None and p is not None
    assert h0 is not None and c0 is not None

    def sig(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    def cut(v: np.ndarray) -> np.ndarray:
        return v if clip is None else np.clip(v, -clip, clip)

    (wi, wo, wf, wc), (ri, ro, rf, rc) = np.split(w[d], 4), np.split(r[d], 4)
    (wbi, wbo, wbf, wbc, rbi, rbo, rbf, rbc), (pi, po, pf) = np.split(b[d], 8), np.split(p[d], 3)
    ys, hs, cs = [], [], []
    for row in range(x.shape[1]):
        h, c, y = h0[d, row], c0[d, row], []
        for xt in x[::-1, row] if backwards else x[:, row]:
            i = sig(cut(xt @ wi.T + h @ ri.T + pi * c + wbi + rbi))
            f = 1 - i if input_forget else sig(cut(xt @ wf.T + h @ rf.T + pf * c + wbf + rbf))
            c = f * c + i * np.tanh(cut(xt @ wc.T + h @ rc.T + wbc + rbc))
            o = sig(cut(xt @ wo.T + h @ ro.T + po * c + wbo + rbo))
            h = o * np.tanh(cut(c))
            y.append(h)
        ys.append(y[::-1] if backwards else y)
        hs.append(h)
        cs.append(c)
    return np.array(ys).transpose(1, 0, 2), np.array(hs), np.array(cs)


LSTM_FULL: dict[str, Any] = {"bias": True, "initial": True, "peepholes": True}


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("input_forget", [0, 1])
def test_lstm_spec_reference_agrees_with_ort_without_clip(
    direction: str, input_forget: int
) -> None:
    """The yardstick of the next test, itself held against onnxruntime where both agree."""
    inputs = make_inputs("LSTM", direction=direction, **LSTM_FULL)
    attrs = with_hidden({"direction": direction, "input_forget": input_forget}, inputs)
    y, y_h, y_c = ort_run("LSTM", inputs, attrs, num_outputs=3)
    for d, backwards in enumerate(reverse_flags(direction)):
        ref = lstm_by_the_spec(inputs, d, backwards, None, input_forget)
        for got, want in zip((y[:, d], y_h[d], y_c[d]), ref, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize(("clip", "input_forget"), [(0.3, 0), (0.6, 0), (0.6, 1), (50.0, 0)])
def test_lstm_clip_follows_the_spec(direction: str, clip: float, input_forget: int) -> None:
    """clip bounds "the input of activations", so also the Ct that h sees (not the state).

    onnxruntime clips only the gates' inputs; where Ct leaves [-clip, clip] it departs from
    the spec, so this holds us to the spec's equations instead.
    """
    inputs = make_inputs("LSTM", direction=direction, **LSTM_FULL)
    attrs = {"direction": direction, "clip": clip, "input_forget": input_forget}
    y, y_h, y_c = ours("LSTM", inputs, attrs, num_outputs=3)
    for d, backwards in enumerate(reverse_flags(direction)):
        ref = lstm_by_the_spec(inputs, d, backwards, clip, input_forget)
        for got, want in zip((y[:, d], y_h[d], y_c[d]), ref, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    if clip < 1:  # the case must reach where onnxruntime departs, or it proves nothing
        ort_y = ort_run("LSTM", inputs, with_hidden(attrs, inputs), num_outputs=1)[0]
        assert np.abs(ort_y - y).max() > 1e-3


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("op", list(GATES))
def test_layout_1(op: str, direction: str) -> None:
    """Batch-first X, initial states and outputs (opset 14 on).

    onnxruntime refuses layout 1 ("Batchwise recurrent operations (layout == 1) are not
    supported"), so this holds us to the spec's definition: the layout-0 node's values, with
    X, initial_h/initial_c, Y and Y_h/Y_c moved batch-first.
    """
    spec: dict[str, Any] = {"bias": True, "initial": True, "lens": [5, 2, 4]}
    spec["peepholes"] = op == "LSTM"
    inputs = make_inputs(op, direction=direction, **spec)
    attrs = with_hidden({"direction": direction}, inputs)
    expected = ort_run(op, inputs, attrs, num_outputs=OUTPUTS[op])
    batch_first = [
        a if a is None or k not in (0, 5, 6) else a.transpose(1, 0, 2) for k, a in enumerate(inputs)
    ]
    got = ours(op, batch_first, {**attrs, "layout": 1}, num_outputs=OUTPUTS[op])
    expected = [expected[0].transpose(2, 0, 1, 3)] + [e.transpose(1, 0, 2) for e in expected[1:]]
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", list(GATES))
def test_opset_7(op: str) -> None:
    inputs = make_inputs(op, direction="bidirectional", bias=True, initial=True, lens=[3, 5, 1])
    assert lookup(op, 7).since == 7
    check(op, inputs, {"direction": "bidirectional"}, opset=7)


ACTIVATIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("LSTM", "forward", {"activations": ["HardSigmoid", "LeakyRelu", "Softsign"],
                         "activation_alpha": [0.3, 0.05], "activation_beta": [0.4]}),
    ("LSTM", "forward", {"activations": ["Sigmoid", "ScaledTanh", "Affine"],
                         "activation_alpha": [1.2, 0.7], "activation_beta": [0.8, 0.1]}),
    ("LSTM", "forward", {"activations": ["Sigmoid", "Relu", "Softplus"]}),
    ("LSTM", "bidirectional", {"activations": ["Sigmoid", "Tanh", "Tanh",
                                               "HardSigmoid", "Elu", "ThresholdedRelu"],
                               "activation_alpha": [0.25, 0.9, 0.1],
                               "activation_beta": [0.45]}),
    ("GRU", "forward", {"activations": ["HardSigmoid", "Softsign"],
                        "activation_alpha": [0.3], "activation_beta": [0.4]}),
    ("GRU", "reverse", {"activations": ["Sigmoid", "Elu"]}),
    ("GRU", "bidirectional", {"activations": ["Sigmoid", "Relu", "Sigmoid", "ScaledTanh"],
                              "activation_alpha": [0.9], "activation_beta": [1.5]}),
    ("RNN", "forward", {"activations": ["Relu"]}),
    ("RNN", "forward", {"activations": ["Sigmoid"]}),
    ("RNN", "reverse", {"activations": ["Softplus"]}),
    ("RNN", "forward", {"activations": ["ThresholdedRelu"], "activation_alpha": [0.2]}),
    ("RNN", "bidirectional", {"activations": ["Elu", "LeakyRelu"],
                              "activation_alpha": [0.7, 0.1]}),
    ("RNN", "bidirectional", {"activations": ["Affine", "ScaledTanh"],
                              "activation_alpha": [0.5, 1.5], "activation_beta": [0.2, 0.6]}),
    ("RNN", "bidirectional", {"activations": ["HardSigmoid", "Softsign"],
                              "activation_alpha": [0.3], "activation_beta": [0.4]}),
]  # fmt: skip


@pytest.mark.parametrize(
    ("op", "direction", "attrs"), ACTIVATIONS, ids=[f"{c[0]}-{'-'.join(c[2]['activations'])}"
                                                    for c in ACTIVATIONS]
)  # fmt: skip
def test_activations(op: str, direction: str, attrs: dict[str, Any]) -> None:
    inputs = make_inputs(op, direction=direction, batch=2, bias=True, initial=True, lens=[5, 3])
    check(op, inputs, {**attrs, "direction": direction})


# onnxruntime takes 0 for an alpha or beta its own table has no default for (Affine,
# ThresholdedRelu; and RNN takes 0 for every missing alpha, LeakyRelu's too). The spec says
# "default values are the same as of corresponding ONNX operators": Affine(alpha=1, beta=0),
# ThresholdedRelu(alpha=1), LeakyRelu(alpha=0.01). We follow the spec, so these hold our
# defaults against ort run with the operators' defaults spelled out.
SPEC_DEFAULTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("RNN", {"activations": ["LeakyRelu"]}, {"activation_alpha": [0.01]}),
    ("RNN", {"activations": ["ThresholdedRelu"]}, {"activation_alpha": [1.0]}),
    ("RNN", {"activations": ["HardSigmoid"]},
     {"activation_alpha": [0.2], "activation_beta": [0.5]}),
    ("LSTM", {"activations": ["Sigmoid", "Affine", "Tanh"]},
     {"activation_alpha": [1.0], "activation_beta": [0.0]}),
    ("GRU", {"activations": ["Sigmoid", "ThresholdedRelu"]}, {"activation_alpha": [1.0]}),
]  # fmt: skip


@pytest.mark.parametrize(("op", "attrs", "spelled_out"), SPEC_DEFAULTS)
def test_activation_defaults_follow_the_spec(
    op: str, attrs: dict[str, Any], spelled_out: dict[str, Any]
) -> None:
    inputs = make_inputs(op, bias=True, initial=True, hidden=4, seed=3)
    n = OUTPUTS[op]
    got = ours(op, inputs, attrs, num_outputs=n)
    expected = ort_run(op, inputs, with_hidden({**attrs, **spelled_out}, inputs), num_outputs=n)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


def ort_slots(
    op: str, inputs: list[np.ndarray | None], attrs: dict[str, Any], wanted: list[bool]
) -> dict[int, np.ndarray]:
    """onnxruntime's outputs for a node whose omitted output slots have empty names."""
    in_names = ["" if x is None else f"x{i}" for i, x in enumerate(inputs)]
    out_names = [f"y{i}" if keep else "" for i, keep in enumerate(wanted)]
    node = helper.make_node(op, in_names, out_names, **attrs)
    graph_inputs = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))
        for n, x in zip(in_names, inputs, strict=True)
        if x is not None
    ]
    model = helper.make_model(
        helper.make_graph([node], "single", graph_inputs, []),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = min(model.ir_version, 9)
    inferred = onnx.shape_inference.infer_shapes(model)
    by_name = {vi.name: vi for vi in inferred.graph.value_info}
    model.graph.output.extend(by_name[n] for n in out_names if n)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {n: x for n, x in zip(in_names, inputs, strict=True) if x is not None}
    values = session.run([n for n in out_names if n], feeds)
    return dict(zip([i for i, keep in enumerate(wanted) if keep], values, strict=True))


WANTED = {
    "LSTM": [[False, True], [False, False, True], [False, True, True]],
    "GRU": [[False, True]],
    "RNN": [[False, True]],
}


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize(
    ("op", "wanted"), [(op, w) for op, ws in WANTED.items() for w in ws]
)  # fmt: skip
def test_omitted_leading_outputs(op: str, wanted: list[bool], direction: str) -> None:
    """Only Y_h (or Y_c) asked for: ort then takes its no-Y path; we still give positions."""
    lens = short_lens(3, allow_empty=op != "RNN")
    inputs = make_inputs(op, direction=direction, bias=True, initial=True, lens=lens)
    attrs = {"direction": direction}
    expected = ort_slots(op, inputs, with_hidden(attrs, inputs), wanted)
    got = ours(op, inputs, attrs, num_outputs=len(wanted))
    assert len(got) == len(wanted)
    for k, e in expected.items():
        assert got[k].dtype == e.dtype and got[k].shape == e.shape
        np.testing.assert_allclose(got[k], e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", list(GATES))
def test_float16_keeps_its_dtype(op: str) -> None:
    inputs = make_inputs(op, direction="bidirectional", dtype=np.float16, bias=True, initial=True)
    attrs = with_hidden({"direction": "bidirectional"}, inputs)
    out = check_op(op, inputs, attrs, num_outputs=OUTPUTS[op], rtol=1e-2, atol=1e-2)
    assert all(o.dtype == np.float16 for o in out)


@pytest.mark.parametrize("op", list(GATES))
def test_long_sequence(op: str) -> None:
    """Wider and longer than the other cases, to catch errors that grow over the steps."""
    inputs = make_inputs(op, direction="bidirectional", batch=4, bias=True, initial=True,
                         lens=[40, 17, 1, 33], steps=40, hidden=16)  # fmt: skip
    check(op, inputs, {"direction": "bidirectional"})


OLD_VERSIONS = [("LSTM", 1), ("GRU", 1), ("GRU", 3), ("RNN", 1)]


@pytest.mark.parametrize(("op", "opset"), OLD_VERSIONS)
def test_versions_before_7_match_7(op: str, opset: int) -> None:
    """ort runs nothing older than opset 7; output_sequence only let Y be omitted."""
    assert lookup(op, opset).since == opset
    inputs = make_inputs(op, direction="reverse", bias=True, initial=True, lens=[5, 2, 3])
    attrs = {"direction": "reverse", "output_sequence": 1}
    got = ours(op, inputs, attrs, opset=opset, num_outputs=OUTPUTS[op])
    want = ours(op, inputs, {"direction": "reverse"}, opset=7, num_outputs=OUTPUTS[op])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_gru_1_reads_the_schema_default_direction_spelling() -> None:
    inputs = make_inputs("GRU", bias=True)
    got = ours("GRU", inputs, {"direction": "foward"}, opset=1, num_outputs=2)
    want = ours("GRU", inputs, {}, opset=7, num_outputs=2)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"direction": "sideways"}, "direction 'sideways'"),
        ({"activations": ["Sigmoid", "Tanh", "Swish"]}, "activation 'Swish'"),
        ({"activations": ["Sigmoid", "Tanh"]}, "activations: 2 given; expected 3"),
        ({"hidden_size": 5}, "hidden_size is 5"),
    ],
)
def test_bad_attributes_say_what_was_expected(attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ours("LSTM", make_inputs("LSTM"), attrs, num_outputs=3)


def test_bad_weight_shape_names_the_input() -> None:
    x, w, r = make_inputs("GRU")
    assert w is not None
    with pytest.raises(ValueError, match=r"W has shape \(1, 9, 3\); expected \(1, 9, 4\)"):
        ours("GRU", [x, w[:, :, :3], r], {})


@st.composite
def random_nodes(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    op = draw(st.sampled_from(list(GATES)))
    direction = draw(st.sampled_from(DIRECTIONS))
    steps, batch = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    lowest = 1 if op == "RNN" else 0  # ort's RNN reads before the start of an empty sequence
    lens = draw(st.none() | st.lists(st.integers(lowest, steps), min_size=batch, max_size=batch))
    spec: dict[str, Any] = {
        "batch": batch,
        "steps": steps,
        "hidden": draw(st.integers(1, 5)),
        "lens": lens,
        "bias": draw(st.booleans()),
        "initial": draw(st.booleans()),
        "peepholes": op == "LSTM" and draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
    }
    return op, direction, spec


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_nodes())
def test_random_shapes_match_ort(node: tuple[str, str, dict[str, Any]]) -> None:
    op, direction, spec = node
    inputs = make_inputs(op, direction=direction, **spec)
    check(op, inputs, {"direction": direction})
