"""The restricted unpickler: what torch's pickles need is read, everything else is refused by
name and nothing a hostile pickle names is ever imported or called."""

from __future__ import annotations

import importlib
import os
import pickle
import pickletools
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from tests.formats.pytorch.torch_pickles import T, state_pickle
from xocview.errors import FormatError
from xocview.formats.pytorch import unpickle
from xocview.formats.pytorch.unpickle import (
    LazyStorage,
    ObjectRecord,
    RefusedClass,
    TensorRecord,
    load_pickle,
    record_class,
)


def _storages(data: dict[str, bytes] | None = None):  # type: ignore[no-untyped-def]
    """A storage factory over in-memory bytes; records what it was asked for."""
    asked: list[tuple[str, str, int]] = []

    def make(key: str, dtype: str, numel: int) -> LazyStorage:
        asked.append((key, dtype, numel))
        raw = np.frombuffer((data or {}).get(key, b""), np.uint8)
        return LazyStorage(key, dtype, numel, lambda: raw, "f.pt", f"data/{key}")

    make.asked = asked  # type: ignore[attr-defined]
    return make


class _Payload:
    """Pickles as a call of ``func(*args)``: what an attacker's checkpoint holds."""

    def __init__(self, func: object, *args: object) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return self.func, self.args


def _refused(data: bytes) -> RefusedClass:
    with pytest.raises(RefusedClass) as info:
        load_pickle(data, "evil.pt", _storages())
    return info.value


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_a_reduce_payload_executes_nothing_and_names_the_class(
    tmp_path: Path, protocol: int
) -> None:
    marker = tmp_path / f"pwned{protocol}"
    data = pickle.dumps({"w": _Payload(os.system, f"touch {marker}")}, protocol)
    error = _refused(data)
    assert not marker.exists()
    assert error.qualname in ("posix.system", "nt.system")
    assert "evil.pt" in str(error) and error.qualname in str(error)
    assert "never imports or calls" in str(error)


@pytest.mark.parametrize(
    ("func", "args", "name"),
    [
        (eval, ("__import__('os').getcwd()",), "builtins.eval"),
        (exec, ("x = 1",), "builtins.exec"),
        (getattr, (_Payload(__import__, "os"), "system"), "builtins.getattr"),
        (subprocess.Popen, (["true"],), "subprocess.Popen"),
        (importlib.import_module, ("os",), "importlib.import_module"),
        (open, ("/etc/passwd",), "io.open"),
    ],
)
def test_dangerous_callables_are_refused_by_name(func: object, args: tuple, name: str) -> None:
    assert _refused(pickle.dumps(_Payload(func, *args), 2)).qualname == name


def test_the_opcodes_that_build_objects_of_a_named_class_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "inst"
    inst = b"(S'touch " + str(marker).encode() + b"'\nios\nsystem\n."  # INST
    obj = b"(cos\nsystem\nS'touch " + str(marker).encode() + b"'\no."  # OBJ
    newobj = b"\x80\x02csubprocess\nPopen\n]S'true'\na\x85\x81."  # NEWOBJ
    stack_global = b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x04true\x85R."  # STACK_GLOBAL
    for data, name in ((inst, "os.system"), (obj, "os.system"), (newobj, "subprocess.Popen")):
        assert _refused(data).qualname == name
    assert _refused(stack_global).qualname == "os.system"
    assert not marker.exists()


def test_a_global_reached_through_an_attribute_path_is_refused() -> None:
    """An allowed module with a dotted name (``_rebuild_tensor_v2.__globals__``) is not an
    allowed entry: the allow list holds exact (module, name) pairs."""
    data = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2.__globals__\n."
    assert _refused(data).qualname == "torch._utils._rebuild_tensor_v2.__globals__"


def test_an_extension_code_goes_through_the_allow_list() -> None:
    import copyreg

    copyreg.add_extension("os", "system", 0xF00D)
    try:
        data = b"\x80\x02\x8a\x02\x0d\xf0"  # a LONG, then the EXT2 opcode below
        data = b"\x80\x02\x83\x0d\xf0."
        assert _refused(data).qualname == "os.system"
    finally:
        copyreg.remove_extension("os", "system", 0xF00D)


def test_tensors_become_lazy_records_of_their_storage() -> None:
    data = state_pickle(
        [
            T("w", "FloatStorage", "0", 6, 0, (2, 3), (3, 1)),
            T("t", "FloatStorage", "0", 6, 1, (2, 2), (1, 3)),
            T("h", "HalfStorage", "1", 2, 0, (2,), (1,)),
        ]
    )
    raw = {"0": np.arange(6, dtype=np.float32).tobytes(), "1": np.float16([1, 2]).tobytes()}
    storages = _storages(raw)
    obj = load_pickle(data, "f.pt", storages)
    assert storages.asked == [("0", "float32", 6), ("1", "float16", 2)]  # type: ignore[attr-defined]
    w, t, h = obj["w"], obj["t"], obj["h"]
    assert isinstance(w, TensorRecord) and w.storage is t.storage  # one storage, shared
    assert (w.dtype, w.shape, w.stride, t.offset) == ("float32", (2, 3), (3, 1), 1)
    np.testing.assert_array_equal(w.values(), [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(t.values(), [[1, 4], [2, 5]])
    assert h.values().dtype == np.float16
    assert not w.values().flags.writeable


@pytest.mark.parametrize(
    ("offset", "shape", "stride"),
    [(0, (2, 3), (4, 1)), (5, (2,), (1,)), (0, (3,), (2**40,)), (2**61, (1,), (1,))],
)
def test_a_view_outside_its_storage_is_refused_before_reading(
    offset: int, shape: tuple, stride: tuple
) -> None:
    data = state_pickle([T("w", "FloatStorage", "0", 6, offset, shape, stride)])
    record = load_pickle(data, "f.pt", _storages({"0": bytes(24)}))["w"]
    with pytest.raises(FormatError, match=r"f\.pt: data/0: .*reaches element"):
        record.check()
    with pytest.raises(FormatError, match="reaches element"):
        record.values()


def test_a_storage_shorter_than_its_count_is_refused_on_reading() -> None:
    data = state_pickle([T("w", "FloatStorage", "0", 6, 0, (6,), (1,))])
    record = load_pickle(data, "f.pt", _storages({"0": bytes(10)}))["w"]
    with pytest.raises(FormatError, match=r"f\.pt: data/0: holds 10 bytes, fewer than the 24"):
        record.values()


def test_an_absurdly_expanded_view_is_refused() -> None:
    data = state_pickle([T("w", "FloatStorage", "0", 1, 0, (2**30, 2**30), (0, 0))])
    record = load_pickle(data, "f.pt", _storages({"0": bytes(4)}))["w"]
    with pytest.raises(FormatError, match="repeating a storage of 1"):
        record.values()


def test_the_plain_values_checkpoints_hold_are_read() -> None:
    value = {
        "d": OrderedDict(a=1),
        "s": {1, 2},
        "f": frozenset({"x"}),
        "b": b"\x00\xff",
        "c": 1 + 2j,
        "sl": slice(1, 5, 2),
        "t": (1.5, None, True, "text"),
    }
    assert load_pickle(pickle.dumps(value, 2), "f.pt", _storages()) == value


def test_numpy_scalars_and_namespaces_of_lightning_hyperparameters_are_read() -> None:
    import argparse

    value = {"lr": np.float64(0.25), "n": np.int32(7), "args": argparse.Namespace(depth=3)}
    got = load_pickle(pickle.dumps(value, 2), "f.pt", _storages())
    assert got == {"lr": 0.25, "n": 7, "args": {"depth": 3}}


def test_a_numpy_array_is_refused_by_name() -> None:
    error = _refused(pickle.dumps({"a": np.zeros(3)}, 2))
    assert error.qualname.endswith("multiarray._reconstruct")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x80\x02}q\x00(X\x01\x00\x00\x00a", "ends early"),
        (b"\x80\x02\xff.", "damaged pickle"),
        (
            b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x00K\x01\x85K\x01\x85\x89}tR.",
            "not a storage",
        ),
        (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(K\x01tR.", "wrong kind"),
        (b"\x80\x02(X\x07\x00\x00\x00storageK\x01tQ.", "persistent id"),
        (b"\x80\x02X\xff\xff\xff\x7fabc.", "ends early"),
    ],
)
def test_damaged_pickles_give_located_errors(data: bytes, problem: str) -> None:
    with pytest.raises(FormatError) as info:
        load_pickle(data, "f.pt", _storages(), "archive/data.pkl")
    text = str(info.value)
    assert text.startswith("f.pt: archive/data.pkl") and problem in text
    assert "Error" not in text and "Traceback" not in text


def test_a_pickle_over_the_limit_is_refused_before_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(unpickle, "MAX_PICKLE", 100)
    with pytest.raises(FormatError, match=r"a pickle of [\d,]+ bytes; expected at most 100 bytes"):
        load_pickle(pickle.dumps(list(range(300)), 2), "f.pt", _storages())


def test_a_pickle_bomb_of_nested_lists_does_not_hang() -> None:
    depth = 300_000
    data = b"\x80\x02" + b"(" * depth + b"l" * depth + b"."
    start = time.perf_counter()
    nested = load_pickle(data, "f.pt", _storages())
    assert isinstance(nested, list)
    assert time.perf_counter() - start < 5


def test_the_stand_ins_refuse_rewriting_by_build() -> None:
    """BUILD on a record (a pickle setting ``shape`` after the checks) is refused."""
    data = state_pickle([T("w", "FloatStorage", "0", 6, 0, (6,), (1,))])
    hacked = data[:-2] + b"}X\x05\x00\x00\x00shapeK\x63sb" + data[-2:]
    with pytest.raises(FormatError, match="rewrites a tensor"):
        load_pickle(hacked, "f.pt", _storages({"0": bytes(24)}))


def test_a_pickle_of_protocol_2_with_python_2_names_is_read() -> None:
    data = b"\x80\x02c__builtin__\nset\n]q\x00(K\x01K\x02e\x85R."
    assert load_pickle(data, "f.pt", _storages()) == {1, 2}
    assert "BINPUT" in "\n".join(str(op[0].name) for op in pickletools.genops(data))


def test_no_module_is_imported_by_refusing(tmp_path: Path) -> None:
    """A refused class's module is never imported (a fresh interpreter checks)."""
    code = (
        "import sys, pickle\n"
        "from xocview.formats.pytorch.unpickle import load_pickle\n"
        "data = b'\\x80\\x02cxml.dom.minidom\\nparseString\\nX\\x04\\x00\\x00\\x00<a/>\\x85R.'\n"
        "try:\n    load_pickle(data, 'f.pt', None)\nexcept Exception as e:\n    print(e)\n"
        "print('xml.dom.minidom' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "xml.dom.minidom.parseString" in out and out.strip().endswith("False")


def test_a_caller_may_read_named_classes_as_records() -> None:
    """TorchScript's data.pkl builds its ``__torch__`` classes: read as records by the
    caller's ``allow`` hook, with the state BUILD gave; other names are still refused."""

    def allow(module: str, name: str) -> object:
        return record_class(module, name) if module.startswith("__torch__") else None

    data = b"\x80\x02c__torch__\nNet\n)\x81}X\x01\x00\x00\x00aK\x01sb."
    net = load_pickle(data, "m.pt", _storages(), allow=allow)
    assert isinstance(net, ObjectRecord) and type(net).qualname == "__torch__.Net"
    assert net.state == {"a": 1}
    with pytest.raises(RefusedClass, match=r"(posix|nt)\.system"):
        load_pickle(pickle.dumps(_Payload(os.system, "true"), 2), "m.pt", _storages(), allow=allow)


def test_a_big_endian_storage_is_read_in_native_order() -> None:
    data = state_pickle([T("w", "IntStorage", "0", 3, 0, (3,), (1,))])

    def make(key: str, dtype: str, numel: int) -> LazyStorage:
        raw = np.frombuffer(np.array([1, -2, 300], ">i4").tobytes(), np.uint8)
        return LazyStorage(key, dtype, numel, lambda: raw, "f.pt", "data/0", big_endian=True)

    values = load_pickle(data, "f.pt", make)["w"].values()
    assert values.dtype == np.int32 and values.tolist() == [1, -2, 300]
