"""torch.save checkpoints (zip and legacy layouts): the values torch wrote, the module tree,
nested checkpoints, refusals of pickled modules and damaged files, and lazy opening."""

from __future__ import annotations

import json
import os
import pickle
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.formats.pytorch.torch_pickles import (
    T,
    state_pickle,
    write_legacy,
    write_sparse_zip,
    write_zip,
)
from xocview.errors import FormatError
from xocview.formats.pytorch import checkpoint
from xocview.formats.source import Source
from xocview.model import Graph, validate

DATA = Path(__file__).parents[2] / "data" / "pytorch"
EXPECTED = json.loads((DATA / "checkpoints_expected.json").read_text())
# torch's dtype names -> xocview's
DTYPES = {"float64": "double", "float8_e4m3fn": "float8e4m3fn", "float8_e5m2": "float8e5m2"}


def _load(path: Path) -> Graph:
    source = Source(path)
    assert checkpoint.sniff(source) is None
    return checkpoint.load(source)


def _check_values(graph: Graph, expected_file: str) -> None:
    """Names, shapes, dtypes and values as torch held them (float32 copies of floats)."""
    values = np.load(DATA / "checkpoints_expected.npz")
    expected = EXPECTED[expected_file]
    got = {t.id: t for t in graph.tensors}
    assert [n for n in got if n in expected] == list(expected)
    for name, (dtype, shape) in expected.items():
        tensor = got[name]
        assert (tensor.dtype, tensor.shape) == (DTYPES.get(dtype, dtype), shape), name
        data = tensor.data
        assert data is not None and data.shape == tuple(shape)
        want = values[f"{expected_file}:{name}"]
        np.testing.assert_array_equal(data.astype(want.dtype), want, err_msg=name)


@pytest.mark.parametrize("name", ["ckpt_state.pt", "ckpt_state_legacy.pt"])
def test_a_state_dict_reads_back_torchs_values_in_both_layouts(name: str) -> None:
    graph = _load(DATA / name)
    _check_values(graph, "ckpt_state.pt")
    assert len(graph.tensors) == len(EXPECTED["ckpt_state.pt"])
    assert graph.metadata["pytorch"]["serialization"] == ("legacy" if "legacy" in name else "zip")


@pytest.mark.parametrize("name", ["ckpt_dtypes.pt", "ckpt_dtypes_legacy.pt"])
def test_every_dtype_including_bf16_and_float8(name: str) -> None:
    graph = _load(DATA / name)
    _check_values(graph, "ckpt_dtypes.pt")
    by_id = {t.id: t for t in graph.tensors}
    assert str(by_id["bf16"].data.dtype) == "bfloat16"  # type: ignore[union-attr]
    assert str(by_id["fp8_e4m3fn"].data.dtype) == "float8_e4m3fn"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["ckpt_views.pt", "ckpt_views_legacy.pt"])
def test_views_sharing_a_storage_honour_offset_and_strides(name: str) -> None:
    graph = _load(DATA / name)
    _check_values(graph, "ckpt_views.pt")
    by_id = {t.id: t for t in graph.tensors}
    assert by_id["transposed"].metadata == {"stride": [1, 5], "storage_offset": 0}
    assert by_id["sliced"].metadata == {"stride": [10, 2], "storage_offset": 6}
    assert by_id["base"].metadata == {}


def test_the_module_tree_of_a_state_dict() -> None:
    graph = _load(DATA / "ckpt_state.pt")
    assert validate(graph) == []
    nodes = {n.id: n for n in graph.nodes}
    blocks = nodes["blocks"]
    assert blocks.metadata["repeated_blocks"] == 3 and "block_kinds" not in blocks.metadata
    assert blocks.metadata["children_ids"] == ["blocks.0", "blocks.1", "blocks.2"]
    attn = nodes["blocks.1.attn"]
    assert attn.metadata["parent_id"] == "blocks.1"
    assert [graph.tensors[i].id for i in attn.inputs] == [
        "blocks.1.attn.weight",
        "blocks.1.attn.bias",
    ]
    bn = nodes["bn"]
    assert bn.metadata["input_names"][-1] == "num_batches_tracked"


def test_a_lightning_checkpoint_keeps_model_names_and_groups_the_optimizer() -> None:
    graph = _load(DATA / "ckpt_lightning.ckpt")
    _check_values(graph, "ckpt_lightning.ckpt")
    assert graph.tensors[0].id == "model.embed.weight"
    tops = {n.id for n in graph.nodes if "parent_id" not in n.metadata}
    assert tops == {"model", "optimizer_states"}
    meta = graph.metadata
    assert meta["pytorch"]["state_dict_key"] == "state_dict"
    values = meta["checkpoint"]
    assert (values["epoch"], values["global_step"]) == (3, 12)
    assert values["hyper_parameters"]["widths"] == [8, 8, 4]
    assert values["hyper_parameters"]["name"] == "tiny\\x1b[31m"  # escaped, not an ESC
    group = values["optimizer_states"]["0"]["param_groups"]["0"]
    assert group["betas"] == [0.9, 0.999] and group["lr"] == 0.001
    json.dumps(meta, allow_nan=False)


def test_a_model_key_and_transformers_pytorch_model_bin() -> None:
    graph = _load(DATA / "ckpt_model_key.pth")
    assert graph.metadata["checkpoint"] == {"epoch": 5}
    assert [t.id for t in graph.tensors] == list(EXPECTED["ckpt_state.pt"])
    bert = _load(DATA / "pytorch_model.bin")
    _check_values(bert, "pytorch_model.bin")
    layer = {n.id: n for n in bert.nodes}["encoder.layer"]
    assert layer.metadata["repeated_blocks"] == 2


def test_a_pickled_module_is_refused_naming_its_first_class() -> None:
    with pytest.raises(FormatError) as info:
        _load(DATA / "ckpt_module.pt")
    text = str(info.value)
    assert text.startswith(f"{DATA / 'ckpt_module.pt'}: ckpt_module/data.pkl: a pickled module")
    assert "__main__.Tiny" in text and "state_dict()" in text and "never" in text


def test_sniff_tells_checkpoints_from_other_zips_and_pickles(tmp_path: Path) -> None:
    assert checkpoint.sniff(Source(DATA / "pt2_cnn.pt2")) is not None
    script = tmp_path / "script.pt"
    with zipfile.ZipFile(script, "w") as z:
        z.writestr("m/data.pkl", b"\x80\x02}.")
        z.writestr("m/code/__torch__/m.py", "")
    assert "TorchScript" in str(checkpoint.sniff(Source(script)))
    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"a": 1}, 2))
    assert checkpoint.sniff(Source(plain)) is not None
    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hi")
    assert checkpoint.sniff(Source(other)) is not None


def _small(tmp_path: Path, name: str = "s.pt") -> Path:
    tensors = [T("a.w", "FloatStorage", "0", 6, 0, (2, 3), (3, 1))]
    raw = np.arange(6, dtype=np.float32).tobytes()
    return write_zip(tmp_path / name, state_pickle(tensors), {"0": raw})


def test_a_cut_zip_is_refused_naming_the_file(tmp_path: Path) -> None:
    data = (DATA / "ckpt_state.pt").read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    assert checkpoint.sniff(Source(cut)) is None  # taken by its name, so load says why
    with pytest.raises(FormatError, match=r"cut\.pt: zip directory: is not a readable zip"):
        checkpoint.load(Source(cut))


def test_a_missing_storage_is_refused_on_opening(tmp_path: Path) -> None:
    tensors = [T("w", "FloatStorage", "0", 2, 0, (2,), (1,))]
    path = write_zip(tmp_path / "m.pt", state_pickle(tensors), {"7": bytes(8)})
    with pytest.raises(FormatError, match=r"m\.pt: archive/data/0: a storage the pickle names"):
        checkpoint.load(Source(path))


def test_a_short_storage_member_is_refused_on_opening(tmp_path: Path) -> None:
    tensors = [T("w", "FloatStorage", "0", 6, 0, (6,), (1,))]
    path = write_zip(tmp_path / "m.pt", state_pickle(tensors), {"0": bytes(20)})
    with pytest.raises(FormatError, match=r"archive/data/0: holds 20 bytes, fewer than the 24"):
        checkpoint.load(Source(path))


def test_a_bad_stride_is_refused_on_opening(tmp_path: Path) -> None:
    tensors = [T("w", "FloatStorage", "0", 6, 0, (2, 3), (3, 2))]
    path = write_zip(tmp_path / "m.pt", state_pickle(tensors), {"0": bytes(24)})
    with pytest.raises(FormatError, match=r"m\.pt: archive/data/0: a tensor of shape 2x3"):
        checkpoint.load(Source(path))


def _legacy(tmp_path: Path, cut: int = 0) -> Path:
    tensors = [
        T("a", "FloatStorage", "k1", 4, 0, (4,), (1,)),
        T("b", "LongStorage", "k2", 2, 0, (2,), (1,)),
    ]
    storages: list[tuple[str, int, bytes | int]] = [
        ("k1", 4, np.float32([1, 2, 3, 4]).tobytes()),
        ("k2", 2, np.int64([5, 6]).tobytes()),
    ]
    path = write_legacy(tmp_path / "l.pt", state_pickle(tensors, legacy=True), storages)
    if cut:
        os.truncate(path, path.stat().st_size - cut)
    return path


def test_a_hand_made_legacy_file_and_its_damage(tmp_path: Path) -> None:
    graph = checkpoint.load(Source(_legacy(tmp_path)))
    np.testing.assert_array_equal(graph.tensors[1].data, [5, 6])  # type: ignore[arg-type]
    with pytest.raises(FormatError, match=r"l\.pt: storage k2: 16 bytes from byte \d+ run past"):
        checkpoint.load(Source(_legacy(tmp_path, cut=3)))
    with pytest.raises(FormatError, match=r"l\.pt: storage k2: its count at byte \d+ is past"):
        checkpoint.load(Source(_legacy(tmp_path, cut=20)))


def test_a_legacy_count_that_disagrees_with_the_pickle_is_refused(tmp_path: Path) -> None:
    tensors = [T("a", "FloatStorage", "k1", 4, 0, (4,), (1,))]
    obj = state_pickle(tensors, legacy=True)
    path = write_legacy(tmp_path / "l.pt", obj, [("k1", 9, bytes(36))])
    with pytest.raises(FormatError, match=r"storage k1: 9 elements at byte \d+; expected 4"):
        checkpoint.load(Source(path))


def test_a_payload_in_a_checkpoint_executes_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return os.system, (f"touch {marker}",)

    evil = pickle.dumps({"w": Payload()}, 2)
    zipped = write_zip(tmp_path / "evil.pt", evil, {})
    legacy = write_legacy(tmp_path / "evil_legacy.pt", evil, [])
    for path in (zipped, legacy):
        with pytest.raises(FormatError) as info:
            checkpoint.load(Source(path))
        assert "posix.system" in str(info.value) or "nt.system" in str(info.value)
        assert str(info.value).startswith(str(path))
    assert not marker.exists()


def test_opening_does_not_read_the_weights(tmp_path: Path) -> None:
    """3 GB sparse storages, zip and legacy: opened in well under a second."""
    n = 3 * 2**30 // 4
    tensors = [T("big.w", "FloatStorage", "0", n, 0, (n // 1024, 1024), (1024, 1))]
    zipped = write_sparse_zip(tmp_path / "big.pt", state_pickle(tensors), "0", n * 4)
    legacy = write_legacy(
        tmp_path / "big_legacy.pt", state_pickle(tensors, legacy=True), [("0", n, n * 4)]
    )
    for path in (zipped, legacy):
        start = time.perf_counter()
        graph = checkpoint.load(Source(path))
        assert time.perf_counter() - start < 1.0
        tensor = graph.tensors[0]
        assert tensor.shape == [n // 1024, 1024] and tensor.has_data
        assert not isinstance(tensor._data, np.ndarray)  # still lazy
        assert tensor.data is not None and float(tensor.data[-1, -1]) == 0.0  # a mapped page


@pytest.mark.parametrize("legacy", [False, True])
def test_live_against_torch_load(tmp_path: Path, legacy: bool) -> None:
    """Checkpoints torch writes now (pickle protocol 4 too) hold the tensors torch saved."""
    torch = pytest.importorskip("torch", reason="torch writes the checkpoint")
    torch.manual_seed(7)
    base = torch.randn(4, 6)
    state = {
        "enc.w": base,
        "enc.wt": base.t()[1:, ::2],
        "dec.bf": torch.randn(3, 5).bfloat16()[:, 1:],
        "dec.f8": torch.randn(7).to(torch.float8_e5m2),
        "dec.i": torch.arange(5, dtype=torch.int16).flip(0),
    }
    path = tmp_path / "live.pt"
    torch.save(state, path, pickle_protocol=4, _use_new_zipfile_serialization=not legacy)
    graph = _load(path)
    assert [t.id for t in graph.tensors] == list(state)
    for tensor in graph.tensors:  # torch.load itself fails on a legacy file with float8
        want = state[tensor.id]
        want = want.float() if want.dtype.is_floating_point else want
        np.testing.assert_array_equal(tensor.data.astype(want.numpy().dtype), want.numpy())  # type: ignore[union-attr]


def test_pickle_bombs_are_bounded(tmp_path: Path) -> None:
    """Lists of one list repeated 10 times, 40 levels deep (10**40 paths), are walked once
    each; lists nested 100,000 deep are refused by depth, quickly."""
    laughs = b"\x80\x02]q\x00K\x01a" + b"".join(
        b"(" + b"h" + bytes([i]) * 1 + (b"h" + bytes([i])) * 9 + b"lq" + bytes([i + 1])
        for i in range(40)
    )
    path = write_zip(tmp_path / "laughs.pt", laughs + b".", {})
    start = time.perf_counter()
    graph = checkpoint.load(Source(path))
    assert time.perf_counter() - start < 2 and graph.tensors == []
    deep = write_zip(tmp_path / "deep.pt", b"\x80\x02" + b"(" * 100_000 + b"l" * 100_000 + b".", {})
    with pytest.raises(FormatError, match=r"deep\.pt: .*nested more than 64 deep"):
        checkpoint.load(Source(deep))
    assert time.perf_counter() - start < 4
