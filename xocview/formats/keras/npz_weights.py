"""The ``model.weights.npz`` variant of a ``.keras`` zip, read as data, never as code.

Keras's ``save_model(..., weights_format="npz")`` writes one ``.npy`` member per layer
(``layers/dense.npy``, ``layers/lstm/cell.npy``) holding a pickled object array: a dict from
``"0"``, ``"1"``... to the backend's Variable objects, whose values are numpy arrays inside
the TensorFlow backend's ResourceVariable arguments. The pickles are read by an unpickler
whose ``find_class`` returns inert stand-ins written here for exactly those names and refuses
every other name; numpy arrays are rebuilt from their bytes with dtype and size checked.
The result is a tree shaped like the HDF5 weights file (``layers/<key>/vars/<n>``) that
``weights.Weights`` reads the same way.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from typing import Any

import numpy as np

from xocview.errors import FormatError

__all__ = ["MEMBER", "Group", "read_tree"]

MEMBER = "model.weights.npz"
_MAGIC = b"\x93NUMPY"
_NUMERIC = "fiub"

# What a damaged or hostile pickle makes the unpickler raise besides UnpicklingError.
_BROKEN = (
    EOFError,
    TypeError,
    ValueError,
    AttributeError,
    IndexError,
    KeyError,
    RecursionError,
    OverflowError,
)


class _Marker:
    """A class named in the pickle only as an argument (numpy.ndarray, ResourceVariable)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __setstate__(self, state: object) -> None:
        raise pickle.UnpicklingError(f"sets the state of {self.name}")


_NDARRAY, _RESOURCE = _Marker("numpy.ndarray"), _Marker("ResourceVariable")


class _DType:
    """numpy.dtype(name, align, copy) and its byte order from the state numpy sets."""

    def __init__(self, name: object = "", *_: object) -> None:
        if not isinstance(name, str):
            raise pickle.UnpicklingError("a dtype that is not named")
        self.name, self.order = name, "|"

    def __setstate__(self, state: object) -> None:
        if isinstance(state, tuple) and len(state) > 1 and state[1] in ("<", ">", "|", "="):
            self.order = str(state[1])


class _Array:
    """numpy's ``_reconstruct(ndarray, shape, b'b')`` then its state: an array of numbers
    (rebuilt from its bytes) or a 0-d object array holding one dict (kept as ``items``)."""

    def __init__(self, cls: object = None, *_: object) -> None:
        if cls is not _NDARRAY:
            raise pickle.UnpicklingError("an array of a class that is not numpy.ndarray")
        self.value: np.ndarray | None = None
        self.items: list[object] = []

    def __setstate__(self, state: object) -> None:
        if not (isinstance(state, tuple) and len(state) == 5):
            raise pickle.UnpicklingError("an array state that is not numpy's")
        _, shape, dtype, fortran, raw = state
        if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise pickle.UnpicklingError("an array shape that is not sizes")
        if not isinstance(dtype, _DType):
            raise pickle.UnpicklingError("an array without a dtype")
        if dtype.name.startswith("O"):
            self.items = list(raw) if isinstance(raw, list) else []
            return
        try:
            dt = np.dtype(dtype.order.replace("|", "") + dtype.name)
        except TypeError as e:
            raise pickle.UnpicklingError(f"dtype {dtype.name!r} is not numpy's") from e
        if dt.kind not in _NUMERIC or dt.hasobject or not isinstance(raw, bytes):
            raise pickle.UnpicklingError(f"an array of {dtype.name!r}, not numbers")
        count = int(np.prod(shape, dtype=np.int64))
        if len(raw) != count * dt.itemsize:
            raise pickle.UnpicklingError(f"{len(raw)} bytes for {count} values of {dt}")
        flat = np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("="), copy=False)
        self.value = flat.reshape(shape, order="F" if fortran else "C")


class _Partial:
    """functools.partial(ResourceVariable) with its keyword arguments; called, it makes a
    record of the variable's initial value."""

    def __init__(self, func: object = None, *_: object) -> None:
        if func is not _RESOURCE:
            raise pickle.UnpicklingError("a partial of something other than ResourceVariable")
        self.kwargs: dict[str, object] = {}

    def __setstate__(self, state: object) -> None:
        if isinstance(state, tuple) and len(state) == 4 and isinstance(state[2], dict):
            self.kwargs = dict(state[2])

    def __call__(self) -> _Resource:
        return _Resource(self.kwargs.get("initial_value"))


class _Resource:
    def __init__(self, initial: object) -> None:
        self.initial = initial


class _Variable:
    """keras.src.backend.Variable: its value, found in its state's ``_value``."""

    def __setstate__(self, state: object) -> None:
        self.value: np.ndarray | None = None
        value = state.get("_value") if isinstance(state, dict) else None
        if isinstance(value, _Resource):
            value = value.initial
        if isinstance(value, _Array):
            self.value = value.value


def _as_dtype(name: object) -> str:
    return str(name)


_ALLOWED: dict[tuple[str, str], object] = {
    ("numpy._core.multiarray", "_reconstruct"): _Array,
    ("numpy.core.multiarray", "_reconstruct"): _Array,
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): _DType,
    ("keras.src.backend", "Variable"): _Variable,
    ("keras.src.backend.tensorflow.core", "Variable"): _Variable,
    ("functools", "partial"): _Partial,
    ("tensorflow.python.ops.resource_variable_ops", "ResourceVariable"): _RESOURCE,
    ("tensorflow.python.framework.dtypes", "as_dtype"): _as_dtype,
}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"names {module}.{name}, which is not weights data")
        return found

    def persistent_load(self, pid: object) -> Any:
        raise pickle.UnpicklingError("refers to a persistent object")


def _variables(raw: bytes) -> list[np.ndarray]:
    """One member's Variables' values, in the order '0', '1', ..."""
    if not raw.startswith(_MAGIC) or len(raw) < 10:
        raise pickle.UnpicklingError("is not a .npy array")
    size = 10 + int.from_bytes(raw[8:10], "little")
    if raw[6] != 1:  # version 2 and 3 headers take four bytes of length
        size = 12 + int.from_bytes(raw[8:12], "little")
    header = raw[:size]
    if b"'|O'" not in header:
        raise pickle.UnpicklingError("is not an object array of variables")
    top = _Unpickler(io.BytesIO(raw[size:])).load()
    items = top.items if isinstance(top, _Array) else []
    table = items[0] if len(items) == 1 and isinstance(items[0], dict) else None
    if table is None:
        raise pickle.UnpicklingError("does not hold a dict of variables")
    values = []
    for key in sorted((k for k in table if isinstance(k, str) and k.isdigit()), key=int):
        var = table[key]
        value = var.value if isinstance(var, _Variable) else None
        if value is None:
            raise pickle.UnpicklingError(f"variable {key} has no numeric value")
        values.append(value)
    return values


class Group(dict):
    """A folder of the tree, read like an h5py group: ``get("layers/dense")``."""

    def get(self, path: str, default: Any = None) -> Any:
        node: Any = self
        for part in path.split("/"):
            if not isinstance(node, Group) or part not in node:
                return default
            node = node[part]
        return node


def read_tree(view: Any, file: str) -> Group:
    """The npz member (a seekable file) as nested dicts: ``tree["layers"]["dense"]["vars"]``
    maps ``"0"``... to arrays. FormatError names the member that cannot be read."""
    tree = Group()
    try:
        with zipfile.ZipFile(view) as z:
            names = [n for n in z.namelist() if n.endswith(".npy")]
            for name in names:
                place = name.removesuffix(".npy")
                try:
                    values = _variables(z.read(name))
                except (pickle.UnpicklingError, *_BROKEN) as e:
                    raise FormatError(file, name, f"cannot be read ({e})", "Keras variables") from e
                node = tree
                for part in place.split("/"):
                    node = node.setdefault(part, Group())
                if values:
                    node["vars"] = Group({str(k): v for k, v in enumerate(values)})
    except (zipfile.BadZipFile, EOFError, OSError) as e:
        raise FormatError(file, "", f"is not a readable npz archive ({e})", "a zip of .npy") from e
    return tree
