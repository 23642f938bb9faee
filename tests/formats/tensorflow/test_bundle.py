"""SavedModel variables read without TensorFlow: every value equals what TensorFlow read from
the same folder (tests/data/tensorflow/make_savedmodel.py), values are views of a memory map,
and damaged or hostile folders are FormatErrors that name the file."""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from xocview.errors import FormatError
from xocview.formats.tensorflow.bundle import OBJECT_GRAPH_KEY, Bundle, slice_key
from xocview.formats.tensorflow.protos import message
from xocview.formats.tensorflow.sstable import FOOTER_SIZE, read_table, varint

DATA = Path(__file__).parents[2] / "data" / "tensorflow"
FOLDERS = ["keras_cnn", "module_vars", "module_shards"]


def _expected(name: str) -> dict[str, np.ndarray]:
    """The npz of TensorFlow's values, string tensors rebuilt from lengths and bytes."""
    z = np.load(DATA / f"{name}_values.npz")
    out: dict[str, np.ndarray] = {}
    for key in z.files:
        if key.endswith("#bytes"):
            continue
        if key.endswith("#lengths"):
            lengths = z[key]
            data = z[key[: -len("#lengths")] + "#bytes"].tobytes()
            ends = np.cumsum(lengths.reshape(-1)).tolist()
            items = np.empty(lengths.size, dtype=object)
            items[:] = [
                data[e - n : e] for e, n in zip(ends, lengths.reshape(-1).tolist(), strict=True)
            ]
            out[key[: -len("#lengths")]] = items.reshape(lengths.shape)
        else:
            out[key] = z[key]
    return out


@pytest.mark.parametrize("name", FOLDERS)
def test_every_value_equals_what_tensorflow_read(name: str) -> None:
    bundle = Bundle(DATA / name)
    expected = _expected(name)
    assert sorted(bundle.keys()) == sorted(expected)
    for key, want in expected.items():
        got = bundle.array(key)
        assert got.dtype == want.dtype, key
        assert got.shape == want.shape, key
        assert bundle.entry(key).shape == want.shape
        if want.dtype == object:
            assert got.tolist() == want.tolist(), key
        else:
            assert np.array_equal(got, want), key
        assert not got.flags.writeable


def test_dtype_names_and_shapes_follow_xocview() -> None:
    bundle = Bundle(DATA / "module_vars")
    kinds = {k.split("/")[0]: bundle.entry(k) for k in bundle}
    assert kinds["w32"].dtype == "float32" and kinds["w32"].shape == (3, 5)
    assert kinds["w16"].dtype == "float16" and kinds["w16"].shape == (4,)
    assert kinds["count"].dtype == "int64"
    assert kinds["flags"].dtype == "bool" and kinds["flags"].shape == (2, 2)
    assert kinds["words"].dtype == "string"
    assert kinds["empty"].shape == (0, 3)
    assert kinds["scalar"].shape == ()
    words = bundle.array("words/.ATTRIBUTES/VARIABLE_VALUE")
    assert words.tolist() == [b"hello", b"", b"w\x00rld\x00", "\u00e9t\u00e9".encode()]
    assert int(bundle.array("count/.ATTRIBUTES/VARIABLE_VALUE")[2]) == 2**40


def test_values_are_views_of_the_shard_map() -> None:
    bundle = Bundle(DATA / "keras_cnn")
    key = next(k for k in bundle if bundle.array(k).ndim == 4)
    kernel = bundle.array(key)
    assert not kernel.flags.owndata and not kernel.flags.writeable
    e = bundle.entry(key)
    assert e.size == kernel.nbytes and e.shard == 0
    raw = (DATA / "keras_cnn/variables/variables.data-00000-of-00001").read_bytes()
    assert raw[e.offset : e.offset + e.size] == kernel.tobytes()


def test_sliced_variable_is_put_together_from_its_shards() -> None:
    bundle = Bundle(DATA / "module_shards")
    assert bundle.num_shards == 2
    assert {bundle.entry(k).shard for k in bundle} == {0, 1}
    sliced = [k for k in bundle if bundle.entry(k).slices]
    assert sliced, "the sharding policy of make_savedmodel.py cuts one variable"
    # Every slice key we encode is a key TensorFlow wrote.
    raw_keys = {k for k in bundle._entries if k.startswith("\0")}
    encoded = {slice_key(k, ext) for k in sliced for ext in bundle.entry(k).slices}
    assert encoded == raw_keys


def test_object_graph_names_every_variable() -> None:
    bundle = Bundle(DATA / "module_vars")
    graph = bundle.object_graph()
    names = {c.local_name for n in graph.nodes for c in n.children}
    assert {"w32", "w16", "count", "flags", "words"} <= names
    keys = {a.checkpoint_key for n in graph.nodes for a in n.attributes}
    assert keys == set(bundle.keys()) - {OBJECT_GRAPH_KEY}


# Hostile folders -------------------------------------------------------------------------


def _copy(tmp_path: Path, name: str = "module_vars") -> Path:
    folder = tmp_path / name
    shutil.copytree(DATA / name / "variables", folder / "variables")
    return folder


def _index(folder: Path) -> Path:
    return folder / "variables" / "variables.index"


def _index_block(raw: bytes) -> tuple[int, int]:
    start = len(raw) - FOOTER_SIZE
    _, pos = varint(raw, start, start + 40, "", "")
    _, pos = varint(raw, pos, start + 40, "", "")
    offset, pos = varint(raw, pos, start + 40, "", "")
    size, _ = varint(raw, pos, start + 40, "", "")
    return offset, size


@pytest.mark.parametrize("length", [0, 10, FOOTER_SIZE - 1, 1000])
def test_truncated_index_names_the_index(tmp_path: Path, length: int) -> None:
    folder = _copy(tmp_path)
    raw = _index(folder).read_bytes()
    _index(folder).write_bytes(raw[:length])
    with pytest.raises(FormatError, match=r"variables\.index: footer"):
        Bundle(folder)


def test_bad_magic_names_the_index(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    raw = bytearray(_index(folder).read_bytes())
    raw[-1] ^= 0xFF
    _index(folder).write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"variables\.index: footer: magic number .*expected"):
        Bundle(folder)


def test_compressed_block_is_refused_by_name(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    raw = bytearray(_index(folder).read_bytes())
    offset, size = _index_block(bytes(raw))
    raw[offset + size] = 1  # the trailer's compression type: snappy
    _index(folder).write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"variables\.index: index block: .*snappy-compressed"):
        Bundle(folder)
    # A data block's flag, through the index block's first handle.
    raw[offset + size] = 0
    end = offset + size
    _, pos = varint(raw, offset, end, "", "")  # the first entry: shared, key and value sizes
    key_len, pos = varint(raw, pos, end, "", "")
    _, pos = varint(raw, pos, end, "", "")
    block_offset, pos = varint(raw, pos + key_len, end, "", "")
    block_size, _ = varint(raw, pos, end, "", "")
    raw[block_offset + block_size] = 2
    _index(folder).write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"variables\.index: data block 0: .*zlib-compressed"):
        Bundle(folder)


def test_shard_shorter_than_an_entry_names_shard_and_key(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    bundle = Bundle(folder)
    last = max(bundle.keys(), key=lambda k: bundle.entry(k).offset + bundle.entry(k).size)
    shard = folder / "variables" / "variables.data-00000-of-00001"
    shard.write_bytes(shard.read_bytes()[: bundle.entry(last).offset + 1])
    with pytest.raises(FormatError) as info:
        Bundle(folder).array(last)
    text = str(info.value)
    assert "variables.data-00000-of-00001" in text and last in text
    assert "run past the shard's" in text and "expected" in text


def test_missing_shard_names_shard_and_key(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "module_shards")
    (folder / "variables" / "variables.data-00001-of-00002").unlink()
    bundle = Bundle(folder)
    key = next(k for k in bundle if bundle.entry(k).shard == 1)
    with pytest.raises(FormatError, match=r"variables\.data-00001-of-00002: .*shard is missing"):
        bundle.array(key)
    on_zero = next(k for k in bundle if bundle.entry(k).shard == 0)
    assert bundle.array(on_zero).size >= 0  # the other shard still reads


def test_missing_index_names_it(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _index(folder).unlink()
    with pytest.raises(FormatError, match=r"variables\.index: is missing"):
        Bundle(folder)


def test_linked_variables_folder_outside_is_refused(tmp_path: Path) -> None:
    outside = _copy(tmp_path, "module_vars")
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "variables").symlink_to(outside / "variables")
    with pytest.raises(FormatError, match="leaves the model's folder"):
        Bundle(folder)


def test_damaged_string_lengths_are_a_format_error(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    bundle = Bundle(folder)
    e = bundle.entry("words/.ATTRIBUTES/VARIABLE_VALUE")
    shard = folder / "variables" / "variables.data-00000-of-00001"
    raw = bytearray(shard.read_bytes())
    raw[e.offset] = 0x7F  # the first length, 5, becomes 127
    shard.write_bytes(bytes(raw))
    with pytest.raises(FormatError, match=r"data-00000-of-00001: words/.*strings end at byte"):
        Bundle(folder).array("words/.ATTRIBUTES/VARIABLE_VALUE")


def test_flipped_index_bytes_never_escape(tmp_path: Path) -> None:
    """Bytes of the index changed one at a time: the bundle reads or says why, nothing else."""
    folder = _copy(tmp_path, "module_shards")
    good = _index(folder).read_bytes()
    rng = np.random.default_rng(32)
    refused = 0
    for at in rng.choice(len(good), 300, replace=False).tolist():
        raw = bytearray(good)
        raw[at] ^= int(rng.integers(1, 256))
        _index(folder).write_bytes(bytes(raw))
        try:
            bundle = Bundle(folder)
            for key in bundle:
                bundle.array(key)
            bundle.object_graph()
        except FormatError as e:
            assert "Error" not in str(e), str(e)
            refused += 1
    assert refused > 30


def test_table_reads_what_the_keys_say() -> None:
    path = _index(DATA / "module_vars")
    records = read_table(path.read_bytes(), str(path))
    keys = [k for k, _ in records]
    assert keys[0] == b"" and keys == sorted(keys)
    assert struct.unpack("<Q", path.read_bytes()[-8:])[0] == 0xDB4775248B80FB57


# Tables written here: several blocks, big-endian values, odd entries ----------------------


def _enc(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _block(entries: list[tuple[bytes, bytes]], restart: int) -> bytes:
    """A LevelDB block: keys sharing their prefix with the previous one, restarts every
    ``restart`` entries."""
    buf, restarts, prev = bytearray(), [], b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % restart:
            while shared < min(len(key), len(prev)) and key[shared] == prev[shared]:
                shared += 1
        else:
            restarts.append(len(buf))
        buf += _enc(shared) + _enc(len(key) - shared) + _enc(len(value)) + key[shared:] + value
        prev = key
    restarts = restarts or [0]
    return (
        bytes(buf) + struct.pack(f"<{len(restarts)}I", *restarts) + struct.pack("<I", len(restarts))
    )


def _table(records: list[tuple[bytes, bytes]], per_block: int = 4, restart: int = 3) -> bytes:
    """A table as TensorFlow's writer lays it out (uncompressed, crc32c left zero)."""
    out, index = bytearray(), []
    for at in range(0, len(records), per_block):
        chunk = records[at : at + per_block]
        block = _block(chunk, restart)
        index.append((chunk[-1][0], _enc(len(out)) + _enc(len(block))))
        out += block + bytes(5)
    handles = b""
    for block in (_block([], 1), _block(index, 1)):
        handles += _enc(len(out)) + _enc(len(block))
        out += block + bytes(5)
    return bytes(out) + handles.ljust(40, b"\0") + struct.pack("<Q", 0xDB4775248B80FB57)


def test_many_blocks_and_restarts_read_the_same(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    records = read_table(_index(folder).read_bytes(), "")
    _index(folder).write_bytes(_table(records, per_block=5, restart=2))
    again, bundle = Bundle(folder), Bundle(DATA / "module_vars")
    assert again.keys() == bundle.keys()
    for key in bundle:
        assert again.entry(key) == bundle.entry(key)
        assert again.array(key).tolist() == bundle.array(key).tolist()


def _entry(**fields: object) -> bytes:
    m = message("BundleEntryProto")()
    shape = fields.pop("shape", None)
    for name, value in fields.items():
        setattr(m, name, value)
    if shape is not None:
        for size in shape:  # type: ignore[attr-defined]
            m.shape.dim.add().size = size
    return m.SerializeToString()


def _bundle(tmp_path: Path, entries: dict[bytes, bytes], data: bytes, **header: int) -> Path:
    folder = tmp_path / "made"
    (folder / "variables").mkdir(parents=True)
    head = message("BundleHeaderProto")(num_shards=1, **header).SerializeToString()
    records = [(b"", head), *sorted(entries.items())]
    _index(folder).write_bytes(_table(records))
    (folder / "variables" / "variables.data-00000-of-00001").write_bytes(data)
    return folder


def test_big_endian_values_read_in_their_order(tmp_path: Path) -> None:
    values = (np.arange(6).reshape(2, 3) / 7).astype(">f4")
    entry = _entry(dtype=1, shape=[2, 3], size=24)
    folder = _bundle(tmp_path, {b"w": entry}, values.tobytes(), endianness=1)
    got = Bundle(folder).array("w")
    assert np.array_equal(got, values) and not got.flags.writeable
    assert got.dtype == np.float32 and got.dtype.isnative


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"dtype": 20, "shape": [], "size": 0}, "DataType is not one xocview reads"),
        ({"dtype": 1, "shape": [-1, 3], "size": 12}, "is not fully known"),
        ({"dtype": 1, "shape": [2, 3], "size": 20}, "entry holds 20 bytes; expected 24 bytes"),
        ({"dtype": 1, "shape": [2], "size": 8, "shard_id": 3}, "shard_id is 3"),
        ({"dtype": 1, "shape": [2], "size": 8, "offset": 20}, "run past the shard's 24 bytes"),
        ({"dtype": 7, "shape": [2**40], "size": 8}, "lengths of 1,099,511,627,776 strings"),
    ],
)
def test_odd_entries_are_refused_by_key(tmp_path: Path, fields: dict, problem: str) -> None:
    folder = _bundle(tmp_path, {b"odd": _entry(**fields)}, bytes(24))
    with pytest.raises(FormatError, match=r"variables\.(index|data-00000-of-00001): odd: "):
        Bundle(folder).array("odd")
    with pytest.raises(FormatError, match=re.escape(problem)):
        Bundle(folder).array("odd")


def test_header_without_shards_is_refused(tmp_path: Path) -> None:
    folder = _bundle(tmp_path, {}, b"")
    head = message("BundleHeaderProto")(num_shards=0).SerializeToString()
    _index(folder).write_bytes(_table([(b"", head)]))
    with pytest.raises(FormatError, match=r"variables\.index: header: num_shards is 0"):
        Bundle(folder)
