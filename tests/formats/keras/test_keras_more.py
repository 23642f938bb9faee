"""The second set of Keras layers (padding, cropping, up-sampling, transposed and separable
convolutions, PReLU, group and unit normalization, activations, RepeatVector, Dot, LSTM, GRU,
SimpleRNN, Bidirectional, MultiHeadAttention) map onto ONNX operators and the executor's
outputs equal Keras's own (made by tests/data/keras/make_keras_more.py)."""

from __future__ import annotations

import io
import json
import pickle
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xocview.errors import FormatError, RunError
from xocview.executor import run
from xocview.formats.keras import keras_file
from xocview.formats.source import Source
from xocview.model import Graph, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "keras"
NAMES = ("image", "line", "acts", "rnn", "attention")
FILES = [
    *(f"more_{n}.keras" for n in NAMES),
    "more_rnn.h5",
    # weights_format="npz": model.weights.npz of pickled Variables, read by a restricted unpickler
    "more_rnn_npz.keras",
    # tf.keras 2's legacy .h5: no shapes recorded, older config and weight names
    *(f"more_{n}_tf2.h5" for n in ("image", "line", "rnn", "attention")),
]
# Every class the generator uses, which must all be mapped.
CLASSES = {
    "ZeroPadding1D",
    "ZeroPadding2D",
    "ZeroPadding3D",
    "Cropping1D",
    "Cropping2D",
    "UpSampling1D",
    "UpSampling2D",
    "Conv1DTranspose",
    "Conv2DTranspose",
    "SeparableConv1D",
    "SeparableConv2D",
    "PReLU",
    "GroupNormalization",
    "UnitNormalization",
    "Activation",
    "Identity",
    "Cropping3D",
    "UpSampling3D",
    "Conv3DTranspose",
    "Rescaling",
    "RepeatVector",
    "Dot",
    "LSTM",
    "GRU",
    "SimpleRNN",
    "Bidirectional",
    "MultiHeadAttention",
}
_PY_NAMES = re.compile(r"\b\w+(Error|Exception)\b|Traceback")


def _model(name: str) -> str:
    return name.split(".")[0].removeprefix("more_").removesuffix("_npz")


def _load(path: Path) -> Graph:
    return keras_file.load(Source(path))


def _expected() -> Any:
    return np.load(DATA / "keras_more_outputs.npz")


def _run(graph: Graph, model: str) -> tuple[dict[str, np.ndarray], Any]:
    expected = _expected()
    feeds = {
        graph.tensors[t].id: expected[f"{model}_input_{k}"] for k, t in enumerate(graph.inputs)
    }
    return run(graph, feeds).outputs, expected


def _rewrite(src: Path, dst: Path, edit: Callable[[dict], None]) -> Path:
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = z.read(info)
            if info.filename == "config.json":
                doc = json.loads(data)
                edit(doc)
                data = json.dumps(doc).encode()
            out.writestr(info, data)
    return dst


def _layer(doc: dict, name: str) -> dict:
    return next(e for e in doc["config"]["layers"] if e["config"]["name"] == name)


@pytest.mark.parametrize("name", FILES)
def test_every_file_loads_with_every_layer_mapped(name: str) -> None:
    source = Source(DATA / name)
    assert keras_file.sniff(source) is None
    graph = _load(DATA / name)
    validate(graph)
    assert [n.id for n in graph.nodes if n.metadata.get("domain") == "keras"] == []
    assert "not_mapped" not in graph.metadata["keras"]
    assert (DATA / name).stat().st_size < 150_000


def test_the_files_use_every_new_layer() -> None:
    used = {n.metadata.get("class_name") for f in FILES for n in _load(DATA / f).nodes}
    assert not CLASSES - used, CLASSES - used


@pytest.mark.parametrize("name", FILES)
def test_outputs_equal_keras(name: str) -> None:
    model = _model(name)
    graph = _load(DATA / name)
    got, expected = _run(graph, model)
    assert len(graph.outputs) == len([k for k in expected if k.startswith(f"{model}_output_")])
    for k, t in enumerate(graph.outputs):
        want = expected[f"{model}_output_{k}"]
        have = got[graph.tensors[t].id]
        assert have.shape == want.shape, graph.tensors[t].id
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-5, err_msg=graph.tensors[t].id)


def test_recurrent_weights_are_reordered_not_taken_as_stored() -> None:
    """Swapping an LSTM's gates back to Keras's order (no reordering) changes the output, so
    the match above is the reordering's doing."""
    graph = _load(DATA / "more_rnn.keras")
    gates = [
        graph.tensors[n.inputs[1]]
        for n in graph.nodes
        if n.op_type == "Gather" and n.id.startswith("lstm_back/")
    ]
    gates = [t for t in gates if t.shape == [4]]
    assert len(gates) == 3  # kernel, recurrent kernel, bias
    for index in gates:
        index.data = np.arange(4, dtype=np.int64)
    got, expected = _run(graph, "rnn")
    out = graph.tensors[graph.outputs[2]].id
    assert out == "lstm_back"
    assert np.abs(got[out] - expected["rnn_output_2"]).max() > 1e-3


def _mask_kwarg(doc: dict) -> None:
    """mha_qkv called with the key input also passed as attention_mask=."""
    call = _layer(doc, "mha_qkv")["inbound_nodes"][0]
    call["kwargs"]["attention_mask"] = call["args"][2]


def _tanh_backward(doc: dict) -> None:
    """bi_lstm's backward layer with another recurrent activation than the forward one."""
    _layer(doc, "bi_lstm")["config"]["backward_layer"]["config"]["recurrent_activation"] = "tanh"


def _set(layer: str, **values: Any) -> Callable[[dict], None]:
    return lambda doc: _layer(doc, layer)["config"].update(values)


@pytest.mark.parametrize(
    ("name", "edit", "layer", "reason"),
    [
        ("more_rnn.keras", _set("lstm_back", unroll=True), "lstm_back", "unroll=True"),
        ("more_rnn.keras", _set("bi_gru", merge_mode=None), "bi_gru", "merge_mode None"),
        (
            "more_image.keras",
            _set("up_bilinear", interpolation="lanczos3"),
            "up_bilinear",
            "interpolation 'lanczos3'",
        ),
        (
            "more_attention.keras",
            _set("mha_qkv", attention_axes=[1, 2]),
            "mha_qkv",
            "attention_axes",
        ),
        ("more_attention.keras", _mask_kwarg, "mha_qkv", "called with 'attention_mask'"),
        ("more_rnn.keras", _tanh_backward, "bi_lstm", "backward_layer"),
    ],
)
def test_configs_without_a_mapping_stay_keras_and_are_refused_by_name(
    tmp_path: Path, name: str, edit: Callable[[dict], None], layer: str, reason: str
) -> None:
    graph = _load(_rewrite(DATA / name, tmp_path / name, edit))
    node = next(n for n in graph.nodes if n.id == layer)
    assert node.metadata.get("domain") == "keras"
    assert reason in node.metadata["not_mapped"]
    model = _model(name)
    with pytest.raises(RunError) as err:
        _run(graph, model)
    message = str(err.value)
    assert layer in message and not _PY_NAMES.search(message)


# -- the npz weights variant: pickles read as data ----------------------------------------------


class _Shell:
    """Pickles as a call of os.system: a loader that ran pickles would run the command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        import os

        return os.system, (f"touch {self.marker}",)


def _npy(body: bytes) -> bytes:
    """A .npy member around a pickle, as numpy writes an object array's."""
    header = b"{'descr': '|O', 'fortran_order': False, 'shape': (), }"
    header += b" " * (117 - len(header)) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + body


def _with_member(src: Path, dst: Path, member: str, edit: Callable[[bytes], bytes]) -> Path:
    """A copy of a .keras zip whose model.weights.npz has ``member`` ``edit``ed."""
    with zipfile.ZipFile(src) as z:
        npz = z.read("model.weights.npz")
        infos = [(i, z.read(i)) for i in z.infolist()]
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(npz)) as inner, zipfile.ZipFile(buf, "w") as out:
        for info in inner.infolist():
            data = inner.read(info)
            out.writestr(info, edit(data) if info.filename == member else data)
    with zipfile.ZipFile(dst, "w") as out:
        for info, data in infos:
            out.writestr(info, buf.getvalue() if info.filename == "model.weights.npz" else data)
    return dst


def test_an_npz_weights_file_has_the_h5_files_weights() -> None:
    a, b = _load(DATA / "more_rnn_npz.keras"), _load(DATA / "more_rnn.keras")
    weights = {t.id: t.shape for t in a.tensors if t.kind == "weight" and "/vars/" in t.id}
    assert weights == {t.id: t.shape for t in b.tensors if t.kind == "weight" and "/vars/" in t.id}
    assert len(weights) == 48  # 3 per recurrent layer or direction, 2 without a bias
    first = next(t for t in a.tensors if t.id == "lstm/cell/vars/0")
    other = next(t for t in b.tensors if t.id == "lstm/cell/vars/0")
    assert first.data is not None and first.data.shape == (4, 24)
    np.testing.assert_array_equal(first.data, other.data)


def test_an_npz_pickle_naming_code_is_refused_and_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    body = pickle.dumps(_Shell(marker), protocol=4)
    path = _with_member(
        DATA / "more_rnn_npz.keras",
        tmp_path / "evil.keras",
        "layers/lstm/cell.npy",
        lambda _: _npy(body),
    )
    with pytest.raises(FormatError) as err:
        _load(path)
    message = str(err.value)
    assert "model.weights.npz" in message and "layers/lstm/cell.npy" in message
    assert "system" in message and not _PY_NAMES.search(message)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda d: d[:-40], "cannot be read"),  # cut short
        (lambda d: d.replace(b"f4", b"O8"), "no numeric value"),  # objects, not numbers
        (lambda d: _npy(pickle.dumps({"0": 1.5}, protocol=4)), "variables"),  # not an array
        (lambda d: b"not a numpy file", "not a .npy array"),
    ],
)
def test_damaged_npz_members_are_located_errors(
    tmp_path: Path, edit: Callable[[bytes], bytes], problem: str
) -> None:
    path = _with_member(
        DATA / "more_rnn_npz.keras", tmp_path / "bad.keras", "layers/simple_rnn/cell.npy", edit
    )
    with pytest.raises(FormatError) as err:
        _load(path)
    message = str(err.value)
    assert "layers/simple_rnn/cell.npy" in message and problem in message, message
    assert not _PY_NAMES.search(message)


def test_an_embedding_that_masks_is_refused_rather_than_run_without_its_mask(
    tmp_path: Path,
) -> None:
    """Keras skips masked steps in the layers after an Embedding(mask_zero=True); run without
    the mask they would give other numbers, so the Embedding is refused by name."""
    src = Path(__file__).resolve().parents[2] / "data" / "keras" / "text.keras"
    graph = _load(_rewrite(src, tmp_path / "masked.keras", _set("embed", mask_zero=True)))
    node = next(n for n in graph.nodes if n.id == "embed")
    assert node.metadata.get("domain") == "keras" and "mask_zero" in node.metadata["not_mapped"]
    graph = _load(src)
    assert next(n for n in graph.nodes if n.id == "embed").op_type == "Gather"
