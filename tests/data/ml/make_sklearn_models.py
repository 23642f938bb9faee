"""Make the ai.onnx.ml test models: real scikit-learn pipelines converted by skl2onnx with
default options, plus two small hand-built graphs for CastMap and CategoryMapper (no
converter writes them), and the seeded inputs each is run on (manifest.json).

Run once with skl2onnx and scikit-learn installed (they are not test dependencies):

    .venv/bin/pip install skl2onnx scikit-learn
    .venv/bin/python tests/data/ml/make_sklearn_models.py

Everything is seeded and small (each file well under 200 KB); the tests compare xocview's
executor with onnxruntime on these files live.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper
from skl2onnx import to_onnx
from skl2onnx.common.data_types import (
    DictionaryType,
    FloatTensorType,
    StringTensorType,
)
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification, make_regression
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import (
    LinearRegression,
    LogisticRegression,
    Ridge,
    SGDClassifier,
)
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import Normalizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR, LinearSVC, LinearSVR, NuSVC, NuSVR, OneClassSVM

HERE = Path(__file__).parent
SEED = 29
ROWS = 7  # rows of each model's test input
ML_OPSET = 3  # ai.onnx.ml: TreeEnsemble* as skl2onnx writes them by default at opset <= 17


def _data(classes: int, features: int = 4, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    x, y = make_classification(
        n_samples=n,
        n_features=features,
        n_informative=min(features, 3),
        n_redundant=0,
        n_classes=classes,
        n_clusters_per_class=1,
        random_state=SEED,
    )
    return x.astype(np.float32), y


def _test_rows(features: int, k: int = 0) -> np.ndarray:
    return np.random.default_rng([SEED, k]).standard_normal((ROWS, features)).astype(np.float32)


def _convert(model: Any, sample: Any, **kw: Any) -> onnx.ModelProto:
    return to_onnx(model, sample, target_opset={"": 17, "ai.onnx.ml": ML_OPSET}, **kw)


def _tensor(x: np.ndarray) -> dict[str, Any]:
    kind = "string" if x.dtype.kind in "OU" else str(x.dtype)
    return {"dtype": kind, "shape": list(x.shape), "values": x.reshape(-1).tolist()}


Made = tuple[onnx.ModelProto, dict[str, Any]]


def classifiers() -> dict[str, Callable[[], Made]]:
    """Classifiers on float features: name -> maker of (model, inputs)."""

    def one(make: Callable[[], Any], classes: int, **kw: Any) -> Callable[[], Made]:
        def build() -> Made:
            x, y = _data(classes)
            model = make().fit(x, y)
            return _convert(model, x[:1], **kw), {"X": _tensor(_test_rows(4))}

        return build

    def strings() -> Made:
        x, y = _data(2)
        labels = np.array(["no", "yes"])[y]
        model = LogisticRegression().fit(x, labels)
        return _convert(model, x[:1]), {"X": _tensor(_test_rows(4))}

    return {
        "logreg_binary": one(LogisticRegression, 2),
        "logreg_3class": one(LogisticRegression, 3),
        "logreg_3class_nozipmap": one(LogisticRegression, 3, options={"zipmap": False}),
        "logreg_binary_strings": strings,
        "sgd_hinge_3class": one(lambda: SGDClassifier(random_state=SEED), 3),
        "linear_svc_binary": one(lambda: LinearSVC(random_state=SEED), 2),
        "linear_svc_3class": one(lambda: LinearSVC(random_state=SEED), 3),
        "svc_rbf_binary": one(SVC, 2),
        "svc_rbf_3class": one(SVC, 3),
        "svc_rbf_3class_proba": one(lambda: SVC(probability=True, random_state=SEED), 3),
        "svc_rbf_binary_proba": one(lambda: SVC(probability=True, random_state=SEED), 2),
        "svc_poly_3class": one(lambda: SVC(kernel="poly"), 3),
        "svc_poly_binary_proba": one(
            lambda: SVC(kernel="poly", probability=True, random_state=SEED), 2
        ),
        "svc_linear_3class": one(lambda: SVC(kernel="linear"), 3),
        "svc_linear_4class_proba": one(
            lambda: SVC(kernel="linear", probability=True, random_state=SEED), 4
        ),
        "svc_sigmoid_3class": one(lambda: SVC(kernel="sigmoid"), 3),
        "nusvc_3class": one(NuSVC, 3),
        "nusvc_binary_proba": one(lambda: NuSVC(probability=True, random_state=SEED), 2),
        "pipeline_scaler_normalizer_logreg": one(
            lambda: make_pipeline(StandardScaler(), Normalizer(), LogisticRegression()), 3
        ),
    }


def regressors() -> dict[str, Callable[[], Made]]:
    def one(make: Callable[[], Any], targets: int = 1) -> Callable[[], Made]:
        def build() -> Made:
            x, y = make_regression(
                n_samples=60, n_features=4, n_targets=targets, noise=0.1, random_state=SEED
            )
            model = make().fit(x.astype(np.float32), y)
            return _convert(model, x[:1].astype(np.float32)), {"X": _tensor(_test_rows(4, 1))}

        return build

    return {
        "linear_regression": one(LinearRegression),
        "ridge_2targets": one(Ridge, 2),
        "linear_svr": one(lambda: LinearSVR(random_state=SEED)),
        "svr_rbf": one(SVR),
        "svr_poly": one(lambda: SVR(kernel="poly")),
        "nusvr_sigmoid": one(lambda: NuSVR(kernel="sigmoid")),
        "one_class_svm": one(OneClassSVM),
    }


def mixed_columns() -> Made:
    """Two string columns one-hot encoded, two numeric columns with gaps imputed, then a
    logistic regression: a ColumnTransformer over several graph inputs."""
    rng = np.random.default_rng(SEED)
    n = 80
    colour = rng.choice(["red", "green", "blue"], n)
    size = rng.choice(["S", "M", "L", "XL"], n)
    nums = rng.standard_normal((n, 2)).astype(np.float32)
    nums[rng.random((n, 2)) < 0.1] = np.nan
    y = (colour == "red") ^ (np.nan_to_num(nums[:, 0]) > 0.3)
    import pandas as pd

    frame = pd.DataFrame({"colour": colour, "size": size, "a": nums[:, 0], "b": nums[:, 1]})
    pre = ColumnTransformer(
        [
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["colour", "size"]),
            ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["a", "b"]),
        ]
    )
    model = Pipeline([("pre", pre), ("clf", LogisticRegression())]).fit(frame, y)
    types = [
        ("colour", StringTensorType([None, 1])),
        ("size", StringTensorType([None, 1])),
        ("a", FloatTensorType([None, 1])),
        ("b", FloatTensorType([None, 1])),
    ]
    onx = to_onnx(model, initial_types=types, target_opset={"": 17, "ai.onnx.ml": ML_OPSET})
    t = np.random.default_rng([SEED, 2])
    test_nums = t.standard_normal((ROWS, 2)).astype(np.float32)
    test_nums[1, 0] = test_nums[4, 1] = np.nan
    inputs = {
        "colour": _tensor(t.choice(["red", "green", "blue", "violet"], (ROWS, 1)).astype(object)),
        "size": _tensor(t.choice(["S", "M", "L", "XL"], (ROWS, 1)).astype(object)),
        "a": _tensor(test_nums[:, :1]),
        "b": _tensor(test_nums[:, 1:]),
    }
    return onx, inputs


_TEXTS = [
    "the cat sat on the mat",
    "a dog ate my homework",
    "the dog and the cat",
    "my homework is late",
    "cats and dogs are pets",
    "the mat is red",
]


def text(vectorizer: Any) -> Callable[[], Made]:
    """A bag of words and a classifier (skl2onnx writes onnxruntime's Tokenizer for it)."""

    def build() -> Made:
        y = np.array([0, 1, 0, 1, 0, 1])
        model = make_pipeline(vectorizer, LogisticRegression()).fit(_TEXTS, y)
        # StringNormalizer's default locale (en_US.UTF-8) is missing on minimal Linux images,
        # where onnxruntime refuses the model; C.UTF-8 is everywhere
        onx = to_onnx(
            model,
            initial_types=[("text", StringTensorType([None, 1]))],
            target_opset={"": 17, "ai.onnx.ml": ML_OPSET},
            options={type(vectorizer): {"locale": "C.UTF-8"}},
        )
        rows = np.array(["the cat ate the homework", "red dogs", "late"], dtype=object)
        return onx, {"text": _tensor(rows.reshape(-1, 1))}

    return build


def dict_vectorizer() -> Made:
    """Dicts of named features vectorised, then a linear SVC with probabilities: the graph's
    input is a map(string, float), one row per run."""
    rng = np.random.default_rng(SEED)
    names = ["age", "height", "weight", "score"]
    rows = [
        {
            k: float(v)
            for k, v in zip(names, rng.standard_normal(4), strict=True)
            if rng.random() > 0.2
        }
        for _ in range(40)
    ]
    y = [int(r.get("age", 0.0) + r.get("score", 0.0) > 0) for r in rows]
    model = make_pipeline(DictVectorizer(sparse=False), LogisticRegression()).fit(rows, y)
    onx = to_onnx(
        model,
        initial_types=[("X", DictionaryType(StringTensorType([]), FloatTensorType([])))],
        target_opset={"": 17, "ai.onnx.ml": ML_OPSET},
    )
    t = np.random.default_rng([SEED, 3])
    test = [
        {k: float(v) for k, v in zip(names, t.standard_normal(4), strict=True) if t.random() > 0.3}
    ]
    test.append({"unknown": 1.0, "age": 0.5})
    return onx, {"X": {"maps": [[[k, v] for k, v in row.items()] for row in test]}}


def cast_map() -> Made:
    """Hand-built (no converter writes CastMap): a sparse map(int64, float) of feature index
    -> value padded to 5 columns by CastMap, then a LinearRegressor fitted by scikit-learn."""
    x, y = make_regression(n_samples=40, n_features=5, noise=0.1, random_state=SEED)
    reg = LinearRegression().fit(x, y)
    nodes = [
        helper.make_node(
            "CastMap",
            ["X"],
            ["dense"],
            domain="ai.onnx.ml",
            cast_to="TO_FLOAT",
            map_form="SPARSE",
            max_map=5,
        ),
        helper.make_node(
            "LinearRegressor",
            ["dense"],
            ["variable"],
            domain="ai.onnx.ml",
            coefficients=reg.coef_.astype(np.float32).tolist(),
            intercepts=[float(reg.intercept_)],
            targets=1,
        ),
    ]
    map_type = helper.make_map_type_proto(
        TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, None)
    )
    graph = helper.make_graph(
        nodes,
        "cast_map_linear",
        [helper.make_value_info("X", map_type)],
        [helper.make_tensor_value_info("variable", TensorProto.FLOAT, [1, 1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)]
    )
    model.ir_version = 8
    t = np.random.default_rng([SEED, 4])
    maps = [
        [[int(k), float(t.standard_normal())] for k in sorted(t.choice(5, 3, replace=False))],
        [[0, 1.5], [4, -2.0], [7, 3.0]],
    ]
    return model, {"X": {"maps": maps}}  # onnxruntime refuses an empty map


def category_mapper() -> Made:
    """Hand-built (no converter writes CategoryMapper): a string column mapped to category
    indices, one-hot encoded, then a LinearClassifier fitted by scikit-learn, labels back to
    strings by a second CategoryMapper."""
    cats = ["apple", "banana", "cherry", "damson"]
    rng = np.random.default_rng(SEED)
    idx = rng.integers(0, 4, 60)
    y = np.where(idx >= 2, 1, 0) ^ (rng.random(60) < 0.1)
    clf = LogisticRegression().fit(np.eye(4)[idx], y)
    ml = "ai.onnx.ml"
    nodes = [
        helper.make_node(
            "CategoryMapper",
            ["fruit"],
            ["index"],
            domain=ml,
            cats_strings=cats,
            cats_int64s=[0, 1, 2, 3],
            default_int64=-1,
        ),
        helper.make_node(
            "OneHotEncoder", ["index"], ["onehot"], domain=ml, cats_int64s=[0, 1, 2, 3], zeros=1
        ),
        helper.make_node("Flatten", ["onehot"], ["features"], axis=1),
        helper.make_node(
            "LinearClassifier",
            ["features"],
            ["label_index", "probabilities"],
            domain=ml,
            coefficients=clf.coef_.astype(np.float32).reshape(-1).tolist(),
            intercepts=clf.intercept_.astype(np.float32).tolist(),
            classlabels_ints=[0, 1],
            post_transform="LOGISTIC",
        ),
        helper.make_node(
            "CategoryMapper",
            ["label_index"],
            ["label"],
            domain=ml,
            cats_strings=["sour", "sweet"],
            cats_int64s=[0, 1],
            default_string="unknown",
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "category_mapper_linear",
        [helper.make_tensor_value_info("fruit", TensorProto.STRING, [None, 1])],
        [
            helper.make_tensor_value_info("label", TensorProto.STRING, [None]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2]),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ml, 1)]
    )
    model.ir_version = 8
    fruit = np.array(["apple", "cherry", "kiwi", "damson", "banana", "apple", ""], dtype=object)
    return model, {"fruit": _tensor(fruit.reshape(-1, 1))}


def main() -> None:
    makers: dict[str, Callable[[], Made]] = {
        **classifiers(),
        **regressors(),
        "column_transformer_mixed": mixed_columns,
        "text_count_logreg": text(CountVectorizer()),
        "text_tfidf_logreg": text(TfidfVectorizer()),
        "dict_vectorizer_logreg": dict_vectorizer,
        "cast_map_linear": cast_map,
        "category_mapper_linear": category_mapper,
    }
    manifest: dict[str, Any] = {}
    for name, make in makers.items():
        model, inputs = make()
        # skl2onnx lists the opset imports in set order, which changes from run to run
        imports = sorted((o.domain, o.version) for o in model.opset_import)
        del model.opset_import[:]
        model.opset_import.extend(helper.make_opsetid(d, v) for d, v in imports)
        onnx.checker.check_model(model)
        path = HERE / f"{name}.onnx"
        path.write_bytes(model.SerializeToString())
        manifest[name] = {"file": path.name, "inputs": inputs}
        print(f"{path.name}: {path.stat().st_size} bytes")
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


if __name__ == "__main__":
    main()
