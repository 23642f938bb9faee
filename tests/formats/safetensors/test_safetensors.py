"""safetensors files and sharded checkpoints: values as torch wrote them, the module tree,
lazy opening of a 7B-shaped checkpoint, and clear refusals of damaged headers."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.perf.weight_files import sharded_safetensors
from xocview.errors import FormatError
from xocview.formats import safetensors
from xocview.formats.registry import detect, load
from xocview.formats.source import Source
from xocview.model import validate
from xocview.model.analyses.tensor_stats import stats

DATA = Path(__file__).parents[2] / "data" / "safetensors"


def _write(path: Path, header: dict, data: bytes = b"", length: int | None = None) -> Path:
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw) if length is None else length))
        f.write(raw)
        f.write(data)
    return path


def test_every_dtype_reads_back_the_values_torch_wrote() -> None:
    graph = load(DATA / "dtypes.safetensors")
    expected = np.load(DATA / "dtypes.npz")
    got = {t.id: t for t in graph.tensors}
    assert set(got) == set(expected.files)
    assert got["float.bf16"].dtype == "bfloat16"
    assert got["float8.e4m3"].dtype == "float8e4m3fn"
    assert got["float8.e5m2"].dtype == "float8e5m2"
    assert got["mask.bool"].dtype == "bool"
    assert got["scalar"].shape == []
    for name in expected.files:
        values = got[name].data
        assert values is not None
        assert list(values.shape) == got[name].shape == list(expected[name].shape)
        np.testing.assert_array_equal(values.astype(np.float64), expected[name], err_msg=name)
    assert graph.metadata["safetensors"]["metadata"] == {"format": "pt", "made_by": "xocview"}


def test_values_agree_with_the_safetensors_library() -> None:
    reference = pytest.importorskip("safetensors.numpy", reason="safetensors is in the test extra")
    path = DATA / "tiny_llama" / "model-00002-of-00004.safetensors"
    theirs = reference.load_file(str(path))
    ours = {t.id: t.data for t in load(path).tensors}
    assert set(ours) == set(theirs)
    for name, values in theirs.items():
        np.testing.assert_array_equal(ours[name], values)


def test_a_sharded_checkpoint_opens_whole_from_its_index_as_a_module_tree() -> None:
    index = DATA / "tiny_llama" / "model.safetensors.index.json"
    assert detect(Source(index)) is safetensors
    graph = load(index)
    state = np.load(DATA / "tiny_llama.npz")
    assert {t.id for t in graph.tensors} == set(state.files)
    for t in graph.tensors:
        np.testing.assert_array_equal(np.asarray(t.data, dtype=np.float32), state[t.id])
    assert validate(graph) == []
    nodes = {n.id: n for n in graph.nodes}
    q = nodes["model.layers.1.self_attn.q_proj"]
    assert [graph.tensors[i].id for i in q.inputs] == ["model.layers.1.self_attn.q_proj.weight"]
    assert q.metadata["parent_id"] == "model.layers.1.self_attn"
    layers = nodes["model.layers"]
    assert layers.metadata["children_ids"] == ["model.layers.0", "model.layers.1"]
    assert layers.metadata["repeated_blocks"] == 2
    assert "block_kinds" not in layers.metadata  # both layers hold the same tensors
    assert nodes["model.layers.0"].op_type == "layers.0"
    assert graph.metadata["safetensors"]["shards"] == 4
    shard = {t.id: t.metadata.get("file") for t in graph.tensors}
    assert shard["lm_head.weight"] == json.loads(index.read_text())["weight_map"]["lm_head.weight"]


def test_the_inspector_statistics_read_bf16_and_float8() -> None:
    got = {t.id: t for t in load(DATA / "dtypes.safetensors").tensors}
    expected = np.load(DATA / "dtypes.npz")
    for name in ("float.bf16", "float8.e4m3"):
        values = got[name].data
        assert values is not None
        s = stats(values)
        assert s is not None
        assert s.min == pytest.approx(expected[name].min())
        assert s.mean == pytest.approx(expected[name].mean(), rel=1e-6)
        assert int(s.histogram.sum()) == expected[name].size


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's VmHWM")
def test_a_7b_shaped_sharded_checkpoint_opens_in_under_a_second_and_200_mb(
    tmp_path: Path,
) -> None:
    index = sharded_safetensors(tmp_path)
    assert sum(p.stat().st_size for p in tmp_path.glob("*.safetensors")) > 13e9
    # VmHWM is the peak of this process's own memory; ru_maxrss would carry the test
    # runner's peak across exec.
    script = textwrap.dedent(
        f"""
        import json, re, time
        from xocview.formats.registry import load
        start = time.perf_counter()
        graph = load({str(index)!r})
        seconds = time.perf_counter() - start
        status = open("/proc/self/status").read()
        peak_kb = int(re.search(r"VmHWM:\\s+(\\d+) kB", status).group(1))
        print(json.dumps({{"seconds": seconds, "tensors": len(graph.tensors), "peak_kb": peak_kb}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["tensors"] == 291
    assert out["seconds"] < 1.0
    assert out["peak_kb"] < 200 * 1024  # the whole process, interpreter and imports included


@pytest.mark.parametrize(
    ("header", "length", "place"),
    [
        (
            {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}},
            None,
            "header.w.data_offsets",
        ),
        (
            {"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},
            None,
            "header.w.data_offsets",
        ),
        ({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 8]}}, None, "header.w.dtype"),
        ({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, None, "header.w.shape"),
        ({"w": [1, 2]}, None, "header.w"),
        ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, 10**12, "header length"),
    ],
)
def test_a_damaged_header_is_refused_naming_the_tensor_and_field(
    tmp_path: Path, header: dict, length: int | None, place: str
) -> None:
    path = _write(tmp_path / "w.safetensors", header, b"\0" * 8, length)
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.place == place
    assert str(path) in str(info.value)


def test_a_header_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    path.write_bytes(struct.pack("<Q", 5) + b"{oops" + b"\0" * 8)
    with pytest.raises(FormatError, match="header: not JSON"):
        load(path)


def test_an_index_cannot_name_a_shard_outside_its_folder(tmp_path: Path) -> None:
    outside = tmp_path / "secret.safetensors"
    _write(outside, {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8)
    folder = tmp_path / "model"
    folder.mkdir()
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "../secret.safetensors"}}))
    with pytest.raises(FormatError, match="leaves the model's folder") as info:
        load(index)
    assert info.value.place == "weight_map.w"


def test_an_index_naming_a_tensor_its_shard_lacks_is_refused(tmp_path: Path) -> None:
    _write(
        tmp_path / "a.safetensors",
        {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
        b"\0" * 8,
    )
    index = tmp_path / "m.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "a.safetensors", "v": "a.safetensors"}}))
    with pytest.raises(FormatError, match=r"not in a\.safetensors") as info:
        load(index)
    assert info.value.place == "weight_map.v"


def test_a_truncated_file_opens_but_its_values_say_it_is_short(tmp_path: Path) -> None:
    header = {"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    path = _write(tmp_path / "w.safetensors", header, b"\0" * 16)
    graph = load(path)
    path.write_bytes(path.read_bytes()[:-8])  # cut after opening, before the first read
    with pytest.raises(FormatError, match="shorter than its header"):
        _ = graph.tensors[0].data


def test_running_a_weights_file_says_it_holds_no_graph() -> None:
    from xocview.errors import RunError
    from xocview.executor import run

    with pytest.raises(RunError, match="holds no graph to run"):
        run(load(DATA / "dtypes.safetensors"), repeat=1)


def test_module_boxes_say_how_many_modules_and_parameters_they_hold() -> None:
    from xocview.ui.canvas.box_texts import BoxTexts, frame_title

    graph = load(DATA / "tiny_llama" / "model.safetensors.index.json")
    texts = BoxTexts(graph, lambda op: "other", lambda node: "", False, np.zeros(0, bool))
    position = {n.id: i for i, n in enumerate(graph.nodes)}
    state = np.load(DATA / "tiny_llama.npz")
    in_layer = sum(state[k].size for k in state.files if k.startswith("model.layers.0."))
    title, detail = texts._node(position["model.layers.0"], closed=True)[:2]
    assert title == "layers.0"
    assert detail == f"9 modules, {in_layer / 1e3:.3g}k params"
    layers = position["model.layers"]
    assert texts._node(layers, closed=True)[1].startswith("2 blocks alike, ")
    assert frame_title(graph, layers) == "model.layers  (2 blocks alike)"
