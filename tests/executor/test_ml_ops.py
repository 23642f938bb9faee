"""ai.onnx.ml kernels against onnxruntime: random forests in both encodings, label encoders,
and the small feature ops sklearn-onnx exports; plus the refusals by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from xocview.executor.registry import lookup

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the per-op suite's reference")

RNG = np.random.default_rng(41)
ML = "ai.onnx.ml"


def _elem_type(x: np.ndarray) -> int:
    if x.dtype.kind in "OUS":
        return TensorProto.STRING
    return helper.np_dtype_to_tensor_dtype(x.dtype)


def _model(
    op: str,
    inputs: list[np.ndarray],
    attrs: dict[str, Any],
    opset: int,
    num_outputs: int,
    domain: str,
) -> tuple[onnx.ModelProto, list[str], list[str]]:
    """A one-node model of ``domain`` at ``opset``; string inputs allowed."""
    names = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(num_outputs)]
    node = helper.make_node(
        op,
        names,
        outs,
        domain=domain,
        **{
            k: numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v
            for k, v in attrs.items()
        },
    )
    graph_inputs = [
        helper.make_tensor_value_info(n, _elem_type(x), list(x.shape))
        for n, x in zip(names, inputs, strict=True)
    ]
    imports = [helper.make_opsetid("", 21)]
    if domain:
        imports.append(helper.make_opsetid(domain, opset))
    graph = helper.make_graph(
        [node], "g", graph_inputs, [onnx.ValueInfoProto(name=n) for n in outs]
    )
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10
    return model, names, outs


def ort_ml(
    op: str,
    inputs: list[np.ndarray],
    attrs: dict[str, Any],
    *,
    opset: int,
    num_outputs: int = 1,
    domain: str = ML,
) -> list[np.ndarray]:
    """One node run by onnxruntime."""
    model, names, outs = _model(op, inputs, attrs, opset, num_outputs, domain)
    model = onnx.shape_inference.infer_shapes(model)
    del model.graph.output[:]
    known = {vi.name: vi for vi in model.graph.value_info}
    model.graph.output.extend(known.get(n, onnx.ValueInfoProto(name=n)) for n in outs)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return list(session.run(outs, dict(zip(names, inputs, strict=True))))


def reference_ml(
    op: str, inputs: list[np.ndarray], attrs: dict[str, Any], *, opset: int, num_outputs: int = 1
) -> list[np.ndarray]:
    """One node run by onnx's ReferenceEvaluator: for the types onnxruntime has no kernel of."""
    model, names, outs = _model(op, inputs, attrs, opset, num_outputs, ML)
    got = ReferenceEvaluator(model).run(outs, dict(zip(names, inputs, strict=True)))
    return [np.asarray(g) for g in got]


def ours(op: str, inputs: list[np.ndarray], attrs: dict[str, Any], *, opset: int) -> list[Any]:
    out = lookup(op, opset).fn(*inputs, **attrs)
    return [np.asarray(o) for o in (out if isinstance(out, tuple) else (out,))]


def check(
    op: str,
    inputs: list[np.ndarray],
    attrs: dict[str, Any],
    *,
    opset: int,
    num_outputs: int = 1,
    rtol: float = 1e-5,
    atol: float = 1e-5,
    reference: bool = False,
) -> list[Any]:
    """Our outputs equal onnxruntime's (or the ReferenceEvaluator's) in shape, dtype
    (strings: any str array) and value."""
    run = reference_ml if reference else ort_ml
    want = run(op, inputs, attrs, opset=opset, num_outputs=num_outputs)
    got = ours(op, inputs, attrs, opset=opset)[:num_outputs]
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, f"{op} output {k}: shape {g.shape}, expected {w.shape}"
        if w.dtype.kind in "OUS":
            assert g.dtype == object and g.tolist() == w.astype(object).tolist(), f"{op} out {k}"
            continue
        assert g.dtype == w.dtype, f"{op} output {k}: dtype {g.dtype}, expected {w.dtype}"
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{op} out {k}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{op} out {k}")
    return got


# ------------------------------------------------------------------------- random forests


_NODE_COLUMNS = [
    "treeids",
    "nodeids",
    "featureids",
    "modes",
    "values",
    "truenodeids",
    "falsenodeids",
    "tracks",
]


def random_trees(
    trees: int, depth: int, features: int, targets: int, *, rng: np.random.Generator = RNG
) -> dict[str, list[Any]]:
    """Random trees in the (tree id, node id) encoding of TreeEnsembleRegressor: node ids
    in depth-first order; every leaf votes for one or two targets."""
    cols: dict[str, list[Any]] = {
        k: [] for k in [*_NODE_COLUMNS, "vtree", "vnode", "vtarget", "vweight"]
    }

    def grow(tree: int, level: int, counter: list[int]) -> int:
        node = counter[0]
        counter[0] += 1
        row = len(cols["treeids"])
        for k in _NODE_COLUMNS:
            cols[k].append(0)
        cols["treeids"][row], cols["nodeids"][row] = tree, node
        if level == depth or (level > 0 and rng.random() < 0.25):
            cols["modes"][row] = "LEAF"
            for t in rng.choice(targets, size=min(targets, int(rng.integers(1, 3))), replace=False):
                cols["vtree"].append(tree)
                cols["vnode"].append(node)
                cols["vtarget"].append(int(t))
                cols["vweight"].append(float(np.float32(rng.normal())))
            return node
        cols["modes"][row] = str(rng.choice(["BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT"]))
        cols["featureids"][row] = int(rng.integers(features))
        cols["values"][row] = float(np.float32(rng.normal()))
        cols["tracks"][row] = int(rng.integers(2))
        cols["truenodeids"][row] = grow(tree, level + 1, counter)
        cols["falsenodeids"][row] = grow(tree, level + 1, counter)
        return node

    for t in range(trees):
        grow(t, 0, [0])
    return cols


def regressor_attrs(cols: dict[str, list[Any]], targets: int, **extra: Any) -> dict[str, Any]:
    return {
        "n_targets": targets,
        "nodes_treeids": cols["treeids"],
        "nodes_nodeids": cols["nodeids"],
        "nodes_featureids": cols["featureids"],
        "nodes_modes": cols["modes"],
        "nodes_values": cols["values"],
        "nodes_truenodeids": cols["truenodeids"],
        "nodes_falsenodeids": cols["falsenodeids"],
        "nodes_missing_value_tracks_true": cols["tracks"],
        "target_treeids": cols["vtree"],
        "target_nodeids": cols["vnode"],
        "target_ids": cols["vtarget"],
        "target_weights": cols["vweight"],
        **extra,
    }


def classifier_attrs(cols: dict[str, list[Any]], labels: list[Any], **extra: Any) -> dict[str, Any]:
    attrs = regressor_attrs(cols, 0)
    del attrs["n_targets"]
    renamed = {
        "target_treeids": "class_treeids",
        "target_nodeids": "class_nodeids",
        "target_ids": "class_ids",
        "target_weights": "class_weights",
    }
    attrs = {renamed.get(k, k): v for k, v in attrs.items()}
    key = "classlabels_strings" if isinstance(labels[0], str) else "classlabels_int64s"
    return {**attrs, key: labels, **extra}


def features(n: int, f: int, dtype: Any = np.float32, nan: bool = True) -> np.ndarray:
    x = RNG.normal(size=(n, f)).astype(dtype)
    if nan and x.dtype.kind == "f":
        x[RNG.random(x.shape) < 0.1] = np.nan
    return x


@pytest.mark.parametrize("aggregate", ["SUM", "AVERAGE", "MIN", "MAX"])
@pytest.mark.parametrize("targets", [1, 3])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
def test_regressor_matches_onnxruntime(aggregate: str, targets: int, post: str) -> None:
    cols = random_trees(7, 4, 5, targets)
    base = [float(np.float32(v)) for v in RNG.normal(size=targets)]
    attrs = regressor_attrs(
        cols, targets, aggregate_function=aggregate, post_transform=post, base_values=base
    )
    check("TreeEnsembleRegressor", [features(40, 5)], attrs, opset=3)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_regressor_input_types_and_as_tensor(dtype: Any) -> None:
    cols = random_trees(5, 3, 4, 2)
    attrs = regressor_attrs(cols, 2)
    x = (features(30, 4, nan=False) * 3).astype(dtype)
    if x.dtype.kind in "iu":  # onnxruntime takes floats only; integers run as float32
        want = ort_ml("TreeEnsembleRegressor", [x.astype(np.float32)], attrs, opset=3)[0]
        got = ours("TreeEnsembleRegressor", [x], attrs, opset=3)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        return
    check("TreeEnsembleRegressor", [x], attrs, opset=3)
    if dtype == np.float64:
        del attrs["nodes_values"], attrs["target_weights"]
        attrs["nodes_values_as_tensor"] = np.array(cols["values"], dtype=np.float64) + 1e-9
        attrs["target_weights_as_tensor"] = np.array(cols["vweight"], dtype=np.float64)
        check("TreeEnsembleRegressor", [x], attrs, opset=3)


def test_regressor_branch_eq_and_neq() -> None:
    cols = random_trees(4, 3, 3, 1)
    cols["modes"] = [
        m if m == "LEAF" else str(RNG.choice(["BRANCH_EQ", "BRANCH_NEQ"])) for m in cols["modes"]
    ]
    cols["values"] = [float(RNG.integers(3)) for _ in cols["values"]]
    x = RNG.integers(0, 3, size=(50, 3)).astype(np.float32)
    x[RNG.random(x.shape) < 0.1] = np.nan
    check("TreeEnsembleRegressor", [x], regressor_attrs(cols, 1), opset=1)


@pytest.mark.parametrize("classes", [3, 5])
@pytest.mark.parametrize("post", ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("with_base", [False, True])
def test_multiclass_classifier_matches_onnxruntime(
    classes: int, post: str, with_base: bool
) -> None:
    cols = random_trees(6, 4, 5, classes)
    labels = [int(v) for v in RNG.choice(100, size=classes, replace=False)]
    extra: dict[str, Any] = {"post_transform": post}
    if with_base:
        extra["base_values"] = [float(np.float32(v)) for v in RNG.normal(size=classes)]
    attrs = classifier_attrs(cols, labels, **extra)
    check("TreeEnsembleClassifier", [features(40, 5)], attrs, opset=3, num_outputs=2)


def _binary_votes(cols: dict[str, list[Any]], which: str, positive: bool) -> None:
    """Rewrite the votes for two classes: class 1 only, both, or either or both per leaf."""
    leaves = sorted(set(zip(cols["vtree"], cols["vnode"], strict=True)))
    cols["vtree"], cols["vnode"], cols["vtarget"], cols["vweight"] = [], [], [], []
    for tree, node in leaves:
        ids = {"one": [1], "both": [0, 1], "mixed": [[0], [1], [0, 1]][int(RNG.integers(3))]}[which]
        for c in ids:
            w = float(np.float32(RNG.random() if positive else RNG.normal()))
            cols["vtree"].append(tree)
            cols["vnode"].append(node)
            cols["vtarget"].append(c)
            cols["vweight"].append(w)


@pytest.mark.parametrize("which", ["one", "both", "mixed"])
@pytest.mark.parametrize("positive", [True, False])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "PROBIT"])
@pytest.mark.parametrize("base", [0, 1, 2])
def test_binary_classifier_matches_onnxruntime(
    which: str, positive: bool, post: str, base: int
) -> None:
    cols = random_trees(3, 3, 4, 2)
    _binary_votes(cols, which, positive)
    extra: dict[str, Any] = {"post_transform": post}
    if base:
        extra["base_values"] = [float(np.float32(v)) for v in RNG.normal(size=base) * 0.3]
    x = features(40, 4)
    for labels in ([0, 1], [4, 9], ["no", "yes"]):
        attrs = classifier_attrs(cols, labels, **extra)
        if which == "one":
            tol = 1e-4 if post == "PROBIT" else 1e-5  # onnxruntime's probit runs in float32
            check("TreeEnsembleClassifier", [x], attrs, opset=3, num_outputs=2, rtol=tol, atol=tol)
            continue
        # Votes for both classes: onnxruntime labels a row 1 (not labels[1]) whenever class 1
        # scores above 0; the spec's label is the top class. A row without class 1 votes and
        # one base value has one score, and onnxruntime leaves the second column unset.
        want = ort_ml("TreeEnsembleClassifier", [x], attrs, opset=3, num_outputs=2)
        got = ours("TreeEnsembleClassifier", [x], attrs, opset=3)
        tol = 1e-4 if post == "PROBIT" else 1e-5  # onnxruntime's probit runs in float32
        np.testing.assert_allclose(got[1][:, 0], want[1][:, 0], rtol=tol, atol=tol)
        defined = np.ones(len(x), dtype=bool)
        if which == "mixed" and (base == 1 or post == "PROBIT"):
            defined = np.isclose(got[1][:, 1], want[1][:, 1], rtol=tol, atol=tol, equal_nan=True)
        np.testing.assert_allclose(got[1][defined], want[1][defined], rtol=tol, atol=tol)
        z = np.where(np.isnan(want[1]), -np.inf, want[1])
        top = [labels[k] for k in np.argmax(z, axis=1)]
        assert [g for g, d in zip(got[0].tolist(), defined, strict=True) if d] == [
            t for t, d in zip(top, defined, strict=True) if d
        ]


def test_classifier_string_labels_multiclass() -> None:
    cols = random_trees(4, 3, 3, 3)
    attrs = classifier_attrs(cols, ["a", "b", "c"], post_transform="SOFTMAX")
    check("TreeEnsembleClassifier", [features(20, 3, np.float64)], attrs, opset=1, num_outputs=2)


def v5_attrs(cols: dict[str, list[Any]], targets: int, dtype: Any, **extra: Any) -> dict[str, Any]:
    """The same trees in TreeEnsemble's encoding: interior nodes and leaves apart, one vote
    per leaf (its first)."""
    interior = [i for i, m in enumerate(cols["modes"]) if m != "LEAF"]
    leaf_rows = [i for i, m in enumerate(cols["modes"]) if m == "LEAF"]
    pos = {(cols["treeids"][i], cols["nodeids"][i]): k for k, i in enumerate(interior)}
    leaf_pos = {(cols["treeids"][i], cols["nodeids"][i]): k for k, i in enumerate(leaf_rows)}
    vote = {}
    for t, n, c, w in zip(
        cols["vtree"], cols["vnode"], cols["vtarget"], cols["vweight"], strict=True
    ):
        vote.setdefault((t, n), (c, w))
    codes = {
        "BRANCH_LEQ": 0,
        "BRANCH_LT": 1,
        "BRANCH_GTE": 2,
        "BRANCH_GT": 3,
        "BRANCH_EQ": 4,
        "BRANCH_NEQ": 5,
    }
    attrs: dict[str, Any] = {
        k: []
        for k in (
            "nodes_featureids",
            "nodes_truenodeids",
            "nodes_falsenodeids",
            "nodes_trueleafs",
            "nodes_falseleafs",
            "nodes_missing_value_tracks_true",
        )
    }
    for i in interior:
        t = cols["treeids"][i]
        attrs["nodes_featureids"].append(cols["featureids"][i])
        attrs["nodes_missing_value_tracks_true"].append(cols["tracks"][i])
        for side in ("true", "false"):
            child = (t, cols[f"{side}nodeids"][i])
            is_leaf = child in leaf_pos
            attrs[f"nodes_{side}leafs"].append(int(is_leaf))
            attrs[f"nodes_{side}nodeids"].append(leaf_pos[child] if is_leaf else pos[child])
    roots = [pos[(t, 0)] for t in sorted(set(cols["treeids"]))]
    keys = [(cols["treeids"][i], cols["nodeids"][i]) for i in leaf_rows]
    return {
        **attrs,
        "nodes_modes": np.array([codes[cols["modes"][i]] for i in interior], dtype=np.uint8),
        "nodes_splits": np.array([cols["values"][i] for i in interior], dtype=dtype),
        "leaf_targetids": [vote[k][0] for k in keys],
        "leaf_weights": np.array([vote[k][1] for k in keys], dtype=dtype),
        "tree_roots": roots,
        "n_targets": targets,
        **extra,
    }


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("aggregate", [0, 1, 2, 3])
@pytest.mark.parametrize("targets", [1, 3])
@pytest.mark.parametrize("post", [0, 1, 2, 3])
def test_tree_ensemble_matches_onnxruntime(
    dtype: Any, aggregate: int, targets: int, post: int
) -> None:
    """onnxruntime numbers post_transform as its own enum (1 LOGISTIC, 2 SOFTMAX); the spec
    says 1 SOFTMAX, 2 LOGISTIC, and so do we: onnxruntime is asked with the two swapped."""
    cols = random_trees(6, 4, 5, targets)
    attrs = v5_attrs(cols, targets, dtype, aggregate_function=aggregate, post_transform=post)
    x = features(40, 5, dtype)
    swapped = {**attrs, "post_transform": {1: 2, 2: 1}.get(post, post)}
    want = ort_ml("TreeEnsemble", [x], swapped, opset=5)[0]
    got = ours("TreeEnsemble", [x], attrs, opset=5)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_tree_ensemble_set_membership_and_single_leaf_tree() -> None:
    """BRANCH_MEMBER sets of several sizes (a big one too), NaN tracking, and a tree that
    is one leaf."""
    attrs = {
        "nodes_featureids": [0, 1, 0, 1],
        "nodes_modes": np.array([6, 6, 0, 6], dtype=np.uint8),
        "nodes_splits": np.array([0, 0, 2.5, 0], dtype=np.float32),
        "nodes_truenodeids": [1, 0, 1, 3],
        "nodes_falsenodeids": [2, 1, 2, 3],
        "nodes_trueleafs": [0, 1, 1, 1],
        "nodes_falseleafs": [0, 1, 1, 1],
        "nodes_missing_value_tracks_true": [1, 0, 0, 0],
        "membership_values": np.array(
            [1, 3, 4, np.nan, *range(0, 80, 2), np.nan, 7, np.nan], dtype=np.float32
        ),
        "leaf_targetids": [0, 1, 0, 1],
        "leaf_weights": np.array([1.0, 10.0, 100.0, 1000.0], dtype=np.float32),
        "tree_roots": [0, 3],
        "n_targets": 2,
    }
    x = RNG.integers(0, 10, size=(60, 2)).astype(np.float32)
    x[::7, 0] = np.nan
    check("TreeEnsemble", [x], attrs, opset=5)


@pytest.mark.parametrize(
    ("attrs", "word"),
    [
        ({"aggregate_function": 7}, "aggregate_function"),
        ({"post_transform": 9}, "post_transform"),
        ({"nodes_modes": np.array([9], dtype=np.uint8)}, "nodes_modes"),
    ],
)
def test_tree_ensemble_refusals(attrs: dict[str, Any], word: str) -> None:
    base = {
        "nodes_featureids": [0],
        "nodes_modes": np.array([0], dtype=np.uint8),
        "nodes_splits": np.array([0.5], dtype=np.float32),
        "nodes_truenodeids": [0],
        "nodes_falsenodeids": [1],
        "nodes_trueleafs": [1],
        "nodes_falseleafs": [1],
        "leaf_targetids": [0, 0],
        "leaf_weights": np.array([1.0, 2.0], dtype=np.float32),
        "tree_roots": [0],
        "n_targets": 1,
    }
    with pytest.raises(ValueError, match=f"{word}.*not supported"):
        ours("TreeEnsemble", [np.zeros((2, 1), np.float32)], {**base, **attrs}, opset=5)


def test_old_tree_ops_refuse_unknown_names() -> None:
    cols = random_trees(2, 2, 2, 1)
    x = features(4, 2)
    for name in ("aggregate_function", "post_transform"):
        with pytest.raises(ValueError, match=f"{name}.*not supported"):
            ours(
                "TreeEnsembleRegressor", [x], regressor_attrs(cols, 1, **{name: "MEDIAN"}), opset=3
            )
    cols["modes"] = ["BRANCH_XX" if m != "LEAF" else m for m in cols["modes"]]
    with pytest.raises(ValueError, match=r"nodes_modes.*not supported"):
        ours("TreeEnsembleRegressor", [x], regressor_attrs(cols, 1), opset=3)


def test_deep_forest_is_stepped_by_level() -> None:
    """A 300-tree forest of depth 10 on 2000 rows: the level-wise walk stays vectorised."""
    cols = random_trees(300, 10, 20, 1, rng=np.random.default_rng(5))
    check(
        "TreeEnsembleRegressor", [features(2000, 20)], regressor_attrs(cols, 1), opset=3, rtol=1e-4
    )


def test_rows_walked_in_blocks_give_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    import xocview.executor.ops.ml_forest as ml_forest

    cols = random_trees(20, 5, 6, 2)
    attrs = regressor_attrs(cols, 2, aggregate_function="MIN")
    x = features(500, 6)
    whole = ours("TreeEnsembleRegressor", [x], attrs, opset=3)[0]
    monkeypatch.setattr(ml_forest, "_PAIRS_PER_CHUNK", 70)
    np.testing.assert_array_equal(ours("TreeEnsembleRegressor", [x], attrs, opset=3)[0], whole)


# -------------------------------------------------------------------------- LabelEncoder


def test_label_encoder_v1_both_directions() -> None:
    classes = ["cat", "dog", "eel"]
    words = np.array(["dog", "cow", "eel", "cat", ""], dtype=object)
    check("LabelEncoder", [words], {"classes_strings": classes, "default_int64": -7}, opset=1)
    codes = np.array([[2, 0], [5, -1]], dtype=np.int64)
    check("LabelEncoder", [codes], {"classes_strings": classes, "default_string": "?"}, opset=1)


@pytest.mark.parametrize(
    ("x", "attrs"),
    [
        (
            np.array(["a", "b", "zz", "a"], dtype=object),
            {"keys_strings": ["a", "b", "c"], "values_int64s": [5, 6, 7], "default_int64": 42},
        ),
        (
            np.array([[3, 1], [9, 3]], dtype=np.int64),
            {"keys_int64s": [1, 3], "values_strings": ["one", "three"], "default_string": "-"},
        ),
        (
            np.array([1.5, np.nan, 2.0, 7.0], dtype=np.float32),
            {"keys_floats": [1.5, float("nan"), 2.0], "values_floats": [0.1, 0.2, 0.3]},
        ),
        (
            np.array(["x", "y", "q"], dtype=object),
            {"keys_strings": ["x", "y"], "values_strings": ["X", "Y"]},
        ),
    ],
)
@pytest.mark.parametrize("opset", [2, 4])
def test_label_encoder_v2_v4(x: np.ndarray, attrs: dict[str, Any], opset: int) -> None:
    if opset == 2 and "keys_floats" in attrs:  # onnxruntime's LabelEncoder 2 maps no NaN
        assert ours("LabelEncoder", [x], attrs, opset=2)[0].tolist() == pytest.approx(
            [0.1, 0.2, 0.3, -0.0]
        )
        return
    check("LabelEncoder", [x], attrs, opset=opset)


@pytest.mark.parametrize(
    ("x", "keys", "values", "default"),
    [
        (
            np.array([1, 5, 9], np.int32),
            np.array([5, 9], np.int32),
            np.array([2.5, 3.5]),
            np.array([-1.5]),
        ),
        (
            np.array([1.0, np.nan], np.float64),
            np.array([np.nan, 1.0], np.float64),
            np.array([7, 8], np.int16),
            np.array([-3], np.int16),
        ),
        (
            np.array(["a", "q"], object),
            np.array(["a", "b"], object),
            np.array([10, 20], np.int32),
            np.array([0], np.int32),
        ),
        (
            np.array([4, 2], np.int64),
            np.array([2, 4], np.int64),
            np.array(["two", "four"], object),
            None,
        ),
    ],
)
def test_label_encoder_v4_tensors(
    x: np.ndarray, keys: np.ndarray, values: np.ndarray, default: np.ndarray | None
) -> None:
    """onnxruntime has LabelEncoder 4 for int64, float, double and string only: the
    reference checks int16 and int32; NaN keys (which it does not match) are checked here."""
    attrs: dict[str, Any] = {"keys_tensor": keys, "values_tensor": values}
    if default is not None:
        attrs["default_tensor"] = default
    if x.dtype.kind == "f":
        got = ours("LabelEncoder", [x], attrs, opset=4)[0]
        assert got.dtype == values.dtype and got.tolist() == [8, 7]
        return
    check("LabelEncoder", [x], attrs, opset=4, reference=values.dtype.kind in "iuf")


def test_label_encoder_repeated_key_takes_the_last() -> None:
    got = ours(
        "LabelEncoder",
        [np.array(["a", "b"], object)],
        {"keys_strings": ["a", "b", "a"], "values_int64s": [1, 2, 3]},
        opset=4,
    )[0]
    assert got.tolist() == [3, 2]


def test_label_encoder_refuses_mismatched_key_type() -> None:
    with pytest.raises(ValueError, match=r"not supported"):
        ours(
            "LabelEncoder",
            [np.array([1, 2], np.int64)],
            {"keys_strings": ["a"], "values_int64s": [1]},
            opset=2,
        )


# ------------------------------------------------------------------- small feature kernels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binarizer(dtype: Any) -> None:
    x = RNG.normal(size=(3, 4, 5)).astype(dtype)
    check("Binarizer", [x], {"threshold": 0.25}, opset=1, reference=dtype != np.float32)


def test_binarizer_nan_is_zero_and_strings_refused() -> None:
    got = ours("Binarizer", [np.array([np.nan, 2.0], np.float32)], {"threshold": 1.0}, opset=1)
    assert got[0].tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match=r"dtype.*not supported"):
        ours("Binarizer", [np.array(["a"], object)], {}, opset=1)


@pytest.mark.parametrize(
    ("x", "y"),
    [
        (RNG.normal(size=(3, 4)).astype(np.float32), np.array([3, 0, 0])),
        (RNG.normal(size=(5,)).astype(np.float64), np.array([[4, 1]])),
        (RNG.integers(0, 9, size=(2, 3, 4)).astype(np.int64), np.array([[2, 0], [1, 1]])),
        (np.array([["a", "b", "c"], ["d", "e", "f"]], object), np.array([2])),
    ],
)
def test_array_feature_extractor(x: np.ndarray, y: np.ndarray) -> None:
    check("ArrayFeatureExtractor", [x, y.astype(np.int64)], {}, opset=1)


def test_array_feature_extractor_refuses_bad_index() -> None:
    with pytest.raises(ValueError, match=r"out of range"):
        ours("ArrayFeatureExtractor", [np.zeros((2, 3)), np.array([3])], {}, opset=1)


@pytest.mark.parametrize("norm", ["MAX", "L1", "L2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_normalizer(norm: str, dtype: Any) -> None:
    x = (RNG.normal(size=(6, 5)) * 4).astype(dtype)
    x[2] = 0
    check("Normalizer", [x], {"norm": norm}, opset=1)
    check("Normalizer", [x[0]], {"norm": norm}, opset=1)


def test_normalizer_refuses_unknown_norm() -> None:
    with pytest.raises(ValueError, match=r"norm.*not supported"):
        ours("Normalizer", [np.ones((2, 2), np.float32)], {"norm": "L3"}, opset=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize("per_column", [False, True])
def test_scaler(dtype: Any, per_column: bool) -> None:
    x = (RNG.normal(size=(4, 3)) * 5).astype(dtype)
    n = 3 if per_column else 1
    attrs = {"offset": [float(np.float32(v)) for v in RNG.normal(size=n)], "scale": [0.5] * n}
    check("Scaler", [x], attrs, opset=1)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float32, np.float64])
def test_one_hot_encoder_numbers(dtype: Any) -> None:
    x = np.array([[1.7, 2, 3], [0, -1, 3]]).astype(dtype)
    check("OneHotEncoder", [x], {"cats_int64s": [1, 3, 0]}, opset=1, reference=dtype == np.int32)


def test_one_hot_encoder_strings_and_zeros() -> None:
    x = np.array([["a", "b"], ["c", "a"]], object)
    check("OneHotEncoder", [x], {"cats_strings": ["b", "a", "c"], "zeros": 0}, opset=1)
    with pytest.raises(ValueError, match=r"not a category"):
        ours("OneHotEncoder", [x], {"cats_strings": ["b", "a"], "zeros": 0}, opset=1)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float64])
def test_feature_vectorizer(dtype: Any) -> None:
    a = RNG.normal(size=(3, 4)).astype(dtype)
    b = RNG.normal(size=(3, 2)).astype(dtype)
    check("FeatureVectorizer", [a, b], {"inputdimensions": [4, 2]}, opset=1)
    check("FeatureVectorizer", [a, b], {"inputdimensions": [2, 3]}, opset=1)
    check("FeatureVectorizer", [a[0], b[0]], {"inputdimensions": [4, 2]}, opset=1)


@pytest.mark.parametrize("nan", [True, False])
def test_imputer_floats(nan: bool) -> None:
    x = RNG.normal(size=(5, 3)).astype(np.float32)
    replaced = float("nan") if nan else 0.0
    x[RNG.random(x.shape) < 0.3] = replaced
    for values in ([7.0], [7.0, 8.0, 9.0]):
        attrs = {"imputed_value_floats": values, "replaced_value_float": replaced}
        check("Imputer", [x], attrs, opset=1)


def test_imputer_ints() -> None:
    x = RNG.integers(-2, 3, size=(4, 3)).astype(np.int64)
    attrs = {"imputed_value_int64s": [5, 6, 7], "replaced_value_int64": 0}
    check("Imputer", [x], attrs, opset=1)
    check("Imputer", [x[0]], attrs, opset=1)
