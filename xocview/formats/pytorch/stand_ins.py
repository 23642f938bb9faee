"""What the restricted unpickler hands out for each global a PyTorch pickle may name.

Every entry is written here, for the job: ``torch._utils._rebuild_tensor_v2`` is a function
that checks its arguments and returns a ``TensorRecord``; ``torch.FloatStorage`` is a marker of
an element type; ``collections.OrderedDict`` is itself (building one calls nothing a pickle
chose). The list comes from what ``torch.save`` writes for state dicts, optimizer states,
Lightning checkpoints and ``transformers``' ``pytorch_model.bin`` (read with
``pickletools.dis``); growing it is a decision about safety, one row at a time.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.errors import shorten
from xocview.formats.pytorch.lazy_tensor import LazyStorage, TensorRecord
from xocview.model.dtypes import numpy_type

__all__ = [
    "STAND_INS",
    "TORCH_DTYPES",
    "BadValue",
    "ObjectRecord",
    "StorageType",
    "TorchDType",
    "record_class",
]


class BadValue(Exception):
    """A stand-in was called with values no ``torch.save`` writes; the message says which."""


@dataclass(frozen=True, slots=True)
class StorageType:
    """``torch.FloatStorage`` and kin: the element type of a storage (an XOC dtype name)."""

    name: str
    dtype: str

    def __setstate__(self, state: object) -> None:
        raise BadValue("a pickle that rewrites a storage type")


@dataclass(frozen=True, slots=True)
class TorchDType:
    """``torch.float32`` and kin: a tensor element type (an XOC dtype name)."""

    name: str
    dtype: str

    def __setstate__(self, state: object) -> None:
        raise BadValue("a pickle that rewrites a dtype")


_STORAGES = {
    "DoubleStorage": "double",
    "FloatStorage": "float32",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}

_DTYPE_NAMES = {
    "float32": "float32",
    "float": "float32",
    "float64": "double",
    "double": "double",
    "float16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8e4m3fn",
    "float8_e4m3fnuz": "float8e4m3fnuz",
    "float8_e5m2": "float8e5m2",
    "float8_e5m2fnuz": "float8e5m2fnuz",
    "float8_e8m0fnu": "float8e8m0",
    "int8": "int8",
    "int16": "int16",
    "short": "int16",
    "int32": "int32",
    "int": "int32",
    "int64": "int64",
    "long": "int64",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
    "uint64": "uint64",
    "bool": "bool",
    "complex64": "complex64",
    "cfloat": "complex64",
    "complex128": "complex128",
    "cdouble": "complex128",
}
TORCH_DTYPES = {k: TorchDType(k, v) for k, v in _DTYPE_NAMES.items()}


def _dims(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(
        isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 62 for v in value
    ):
        raise BadValue(f"a tensor {what} that is not a tuple of non-negative integers")
    if len(value) > 64:
        raise BadValue(f"a tensor {what} of {len(value):,} dimensions")
    return value


def _record(
    storage: Any, offset: Any, size: Any, stride: Any, grad: Any, dtype: str | None = None
) -> TensorRecord:
    if not isinstance(storage, LazyStorage):
        raise BadValue("a tensor rebuilt from something that is not a storage")
    shape, strides = _dims(size, "size"), _dims(stride, "stride")
    if len(shape) != len(strides):
        raise BadValue(f"a tensor of {len(shape)} dimensions with {len(strides)} strides")
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset < 1 << 62:
        raise BadValue("a tensor with a bad storage offset")
    return TensorRecord(storage, dtype or storage.dtype, offset, shape, strides, grad is True)


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any) -> TensorRecord:
    return _record(storage, offset, size, stride, False)


def _rebuild_tensor_v2(
    storage: Any, offset: Any, size: Any, stride: Any, grad: Any, hooks: Any, meta: Any = None
) -> TensorRecord:
    return _record(storage, offset, size, stride, grad)


def _rebuild_tensor_v3(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    grad: Any,
    hooks: Any,
    dtype: Any,
    meta: Any = None,
) -> TensorRecord:
    """torch >= 2.1 for dtypes without a typed storage class (float8, uint16 ...): an
    untyped (byte) storage, offsets and strides counted in ``dtype`` elements."""
    if not isinstance(dtype, TorchDType):
        raise BadValue("a tensor whose dtype is not a torch dtype")
    return _record(storage, offset, size, stride, grad, dtype.dtype)


def _rebuild_meta_tensor_no_storage(dtype: Any, size: Any, stride: Any, grad: Any) -> TensorRecord:
    if not isinstance(dtype, TorchDType):
        raise BadValue("a tensor whose dtype is not a torch dtype")
    shape = _dims(size, "size")
    return TensorRecord(None, dtype.dtype, 0, shape, _dims(stride, "stride"), grad is True)


def _rebuild_parameter(data: Any, grad: Any, hooks: Any, state: Any = None) -> TensorRecord:
    if not isinstance(data, TensorRecord):
        raise BadValue("a parameter rebuilt from something that is not a tensor")
    data.parameter, data.requires_grad = True, grad is True
    return data


_TENSOR_TYPES = frozenset({"torch._tensor.Tensor", "torch.nn.parameter.Parameter"})


@dataclass(frozen=True, slots=True)
class _TypeMarker:
    """``torch.Tensor`` / ``torch.nn.Parameter`` as ``_rebuild_from_type_v2`` names them."""

    name: str

    def __setstate__(self, state: object) -> None:
        raise BadValue("a pickle that rewrites a type")


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    """A tensor with Python attributes: rebuilt by one of the stand-ins, state dropped."""
    if func not in _REBUILDERS or not isinstance(new_type, _TypeMarker):
        raise BadValue("a tensor of a subclass, rebuilt by a function of its own")
    if not isinstance(args, tuple):
        raise BadValue("a tensor rebuilt with arguments that are not a tuple")
    return func(*args)


def _size(dims: Any) -> tuple[int, ...]:
    return _dims(dims, "size")


def _new_set(items: Any = ()) -> set[Any]:
    return set(_sequence(items))


def _new_frozenset(items: Any = ()) -> frozenset[Any]:
    return frozenset(_sequence(items))


def _sequence(items: Any) -> list[Any] | tuple[Any, ...]:
    if not isinstance(items, (list, tuple)):
        raise BadValue("a set built from something that is not a list")
    return items


def _slice(*args: Any) -> slice:
    if len(args) > 3 or not all(a is None or type(a) is int for a in args):
        raise BadValue("a slice of values that are not integers")
    return slice(*args)


def _complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not all(type(v) in (int, float) for v in (real, imag)):
        raise BadValue("a complex number of values that are not numbers")
    return complex(real, imag)


def _encode(text: Any, encoding: Any = "latin1") -> bytes:
    """Protocol 2's spelling of ``bytes``: ``_codecs.encode(text, 'latin1')``."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise BadValue("bytes written in an unexpected way")
    return text.encode("latin1")


def _bytearray(data: Any = b"") -> bytearray:
    if not isinstance(data, bytes):
        raise BadValue("a bytearray built from something that is not bytes")
    return bytearray(data)


def _defaultdict(factory: Any = None, *_: Any) -> dict[Any, Any]:
    """A ``defaultdict`` read as the plain dict it holds (its factory is not kept)."""
    if factory is not None and not isinstance(factory, _TypeMarker):
        raise BadValue("a defaultdict with a factory that is not a builtin type")
    return {}


def _device(kind: Any, index: Any = None) -> str:
    if not isinstance(kind, str) or not (index is None or type(index) is int):
        raise BadValue("a device that is not a name and an index")
    return kind if index is None else f"{kind}:{index}"


def _path(*parts: Any) -> str:
    if not all(isinstance(p, str) for p in parts):
        raise BadValue("a path whose parts are not strings")
    return "/".join(parts)


class _Record(dict[Any, Any]):
    """``argparse.Namespace``, Lightning's ``AttributeDict``: read as the dict they hold."""

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, slots)
            state = state[0]
        if state is not None and not isinstance(state, dict):
            raise BadValue("a record whose state is not a dict")
        self.update(state or {})


class ObjectRecord:
    """An object of a class the caller chose to read as data (TorchScript's ``__torch__.Net``):
    ``qualname`` says which class, ``args`` what it was built with, ``state`` what BUILD gave
    (a module's attributes). Nothing of the class is imported; no method of it runs."""

    qualname = ""

    def __init__(self, *args: Any) -> None:
        self.args, self.state = args, None

    def __new__(cls, *args: Any) -> ObjectRecord:
        made = super().__new__(cls)
        made.args, made.state = args, None
        return made

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"ObjectRecord({self.qualname})"


def record_class(module: str, name: str) -> type[ObjectRecord]:
    """A subclass of ObjectRecord standing for ``module.name``: what an ``allow`` hook of
    ``load_pickle`` returns for classes to be read as records."""
    return type(name, (ObjectRecord,), {"qualname": f"{module}.{name}", "__slots__": ()})


class _NumpyDType:
    """``numpy.dtype('f8')`` as a pickle builds it; only plain numeric types are read."""

    __slots__ = ("dtype",)

    def __init__(self, name: Any, align: Any = False, copy: Any = False) -> None:
        if not isinstance(name, str) or name[:1] not in ("f", "i", "u", "b", "c") or len(name) > 4:
            raise BadValue(f"a numpy dtype {shorten(str(name))} that is not plain numbers")
        self.dtype = np.dtype(name)

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple) and len(state) > 1 and state[1] in ("<", ">", "|", "="):
            self.dtype = self.dtype.newbyteorder(state[1])


def _numpy_scalar(dtype: Any, data: Any = None) -> Any:
    if not isinstance(dtype, _NumpyDType) or not isinstance(data, bytes):
        raise BadValue("a numpy scalar of no plain numeric type")
    if len(data) != dtype.dtype.itemsize:
        raise BadValue("a numpy scalar of the wrong size")
    return np.frombuffer(data, dtype.dtype)[0].item()


_BUILTIN_TYPES = {n: _TypeMarker(f"builtins.{n}") for n in ("list", "dict", "int", "float", "str")}

_REBUILDERS = {
    _rebuild_tensor,
    _rebuild_tensor_v2,
    _rebuild_tensor_v3,
    _rebuild_parameter,
    _rebuild_meta_tensor_no_storage,
}

STAND_INS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._utils", "_rebuild_meta_tensor_no_storage"): _rebuild_meta_tensor_no_storage,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch._tensor", "Tensor"): _TypeMarker("torch._tensor.Tensor"),
    ("torch.nn.parameter", "Parameter"): _TypeMarker("torch.nn.parameter.Parameter"),
    ("torch.storage", "UntypedStorage"): StorageType("UntypedStorage", "uint8"),
    ("torch", "UntypedStorage"): StorageType("UntypedStorage", "uint8"),
    ("torch", "Size"): _size,
    ("torch", "device"): _device,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "defaultdict"): _defaultdict,
    ("builtins", "set"): _new_set,
    ("builtins", "frozenset"): _new_frozenset,
    ("builtins", "slice"): _slice,
    ("builtins", "complex"): _complex,
    ("builtins", "bytearray"): _bytearray,
    ("_codecs", "encode"): _encode,
    ("argparse", "Namespace"): _Record,
    ("lightning_fabric.utilities.data", "AttributeDict"): _Record,
    ("pytorch_lightning.utilities.parsing", "AttributeDict"): _Record,
    ("lightning.fabric.utilities.data", "AttributeDict"): _Record,
    ("torch.torch_version", "TorchVersion"): str,
    ("pathlib", "PosixPath"): _path,
    ("pathlib", "WindowsPath"): _path,
    ("pathlib", "PurePosixPath"): _path,
    ("pathlib", "PureWindowsPath"): _path,
    ("numpy", "dtype"): _NumpyDType,
    ("numpy.core.multiarray", "scalar"): _numpy_scalar,
    ("numpy._core.multiarray", "scalar"): _numpy_scalar,
    **{("torch", k): StorageType(k, v) for k, v in _STORAGES.items()},
    **{("builtins", k): v for k, v in _BUILTIN_TYPES.items()},
}

# Every dtype a stand-in can give has a numpy type (bf16 and float8 through ml_dtypes).
assert all(numpy_type(d.dtype) is not None for d in TORCH_DTYPES.values())
