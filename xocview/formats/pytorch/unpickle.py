"""A restricted unpickler for PyTorch's pickles: a file is data, never code.

``pickle`` builds objects by calling whatever a pickle names, so a checkpoint could run
``os.system`` on opening. Here every global a pickle names is looked up in an allow list of
stand-ins written for the job (``_rebuild_tensor_v2`` becomes a function that records the
tensor's storage, dtype, offset, shape and stride; ``torch.FloatStorage`` a marker of its
element type); nothing is imported and nothing outside the list is called. Anything else is
refused, naming the class. Tensors come back as ``TensorRecord``: a lazy view of a storage
whose bytes the caller's ``LazyStorage`` reads on first use (a zip member or a file range).
"""

from __future__ import annotations

import _compat_pickle
import io
import pickle
import struct
from collections.abc import Callable
from typing import Any, Protocol

from xocview.errors import FormatError, shorten
from xocview.formats.pytorch.lazy_tensor import LazyStorage, TensorRecord
from xocview.formats.pytorch.stand_ins import (
    STAND_INS,
    TORCH_DTYPES,
    BadValue,
    ObjectRecord,
    StorageType,
    record_class,
)

__all__ = [
    "MAX_PICKLE",
    "LazyStorage",
    "ObjectRecord",
    "RefusedClass",
    "StorageFactory",
    "Stream",
    "TensorRecord",
    "load_pickle",
    "load_pickle_from",
    "record_class",
]

# The largest pickle read: a 7B model's state dict pickle is ~60 KB and 100k tensors with an
# optimizer's state fit in ~30 MB; objects built from a pickle take at most ~70 times its size.
MAX_PICKLE = 64 << 20

# (key, storage dtype as an XOC name, element count) -> the storage's lazy bytes
StorageFactory = Callable[[str, str, int], LazyStorage]


class Stream(Protocol):
    """What the C unpickler reads from: a file, a BytesIO, a window of a memory map."""

    def read(self, n: int = -1, /) -> bytes: ...

    def readline(self) -> bytes: ...

    def tell(self) -> int: ...


class RefusedClass(FormatError):
    """A pickle names a global outside the allow list; ``qualname`` is ``module.name``."""

    def __init__(self, file: str, place: str, qualname: str) -> None:
        super().__init__(
            file,
            place,
            f"the pickle refers to {shorten(qualname)}, which is not a tensor, storage or "
            "plain container; xocview never imports or calls what a pickle names",
            "a state dict of tensors, numbers, strings, lists and dicts",
        )
        self.qualname = qualname


class _Unpickler(pickle.Unpickler):
    """pickle's C unpickler with ``find_class`` limited to the stand-ins and torch's
    persistent storage ids handed to the caller's factory."""

    def __init__(
        self,
        stream: Stream,
        file: str,
        place: str,
        storages: StorageFactory,
        allow: Callable[[str, str], Any] | None,
    ) -> None:
        super().__init__(stream)
        self._file, self._place, self._storages, self._allow = file, place, storages, allow
        self._made: dict[str, LazyStorage] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _compat_pickle.NAME_MAPPING:  # Python 2 names (protocol 2)
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        found = STAND_INS.get((module, name))
        if found is None and module == "torch" and name in TORCH_DTYPES:
            found = TORCH_DTYPES[name]
        if found is None and self._allow is not None:
            found = self._allow(module, name)
        if found is None:
            raise RefusedClass(self._file, self._place, f"{module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> LazyStorage:
        """torch's ``('storage', type, key, location, numel[, view])`` -> the storage."""
        if not isinstance(pid, tuple) or len(pid) not in (5, 6) or pid[0] != "storage":
            raise BadValue(f"a persistent id {shorten(repr(type(pid).__name__))}")
        _, kind, key, _location, numel = pid[:5]
        if not isinstance(kind, StorageType):
            raise BadValue("a storage id whose type is not a torch storage class")
        if not isinstance(key, str) or not _is_count(numel):
            raise BadValue(f"storage id {shorten(str(key))} with a bad key or element count")
        storage = self._made.get(key)
        if storage is None:
            storage = self._made[key] = self._storages(key, kind.dtype, numel)
        view = pid[5] if len(pid) == 6 else None
        if view is not None:  # torch < 1.6 saved views of storages: (view key, offset, size)
            if not (isinstance(view, tuple) and len(view) == 3 and _is_count(view[1])):
                raise BadValue(f"storage {shorten(key)} with a bad view")
            if not _is_count(view[2]):
                raise BadValue(f"storage {shorten(key)} with a bad view size")
            return storage.view(view[1], view[2])
        return storage


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62


def load_pickle(
    data: bytes,
    file: str,
    storages: StorageFactory,
    place: str = "data.pkl",
    allow: Callable[[str, str], Any] | None = None,
) -> Any:
    """The object a pickle holds (``data.pkl``, ``constants.pkl``), tensors as records.

    ``allow(module, name)`` may grant a global outside the list a stand-in of the caller's
    (TorchScript's ``__torch__.*`` classes as ``record_class(module, name)``), or None.
    Raises RefusedClass for a global outside the allow list (nothing named is imported or
    called) and FormatError naming ``place`` for a damaged or oversized pickle."""
    if len(data) > MAX_PICKLE:
        raise FormatError(
            file, place, f"a pickle of {len(data):,} bytes", f"at most {MAX_PICKLE:,} bytes"
        )
    return load_pickle_from(io.BytesIO(data), file, storages, place, allow)


def load_pickle_from(
    stream: Stream,
    file: str,
    storages: StorageFactory,
    place: str,
    allow: Callable[[str, str], Any] | None = None,
) -> Any:
    """One pickle read from ``stream``, left just past its STOP (the legacy format has
    several pickles in a row); raises as ``load_pickle``."""
    unpickler = _Unpickler(stream, file, place, storages, allow)
    try:
        return unpickler.load()
    except FormatError:
        raise
    except BadValue as e:
        raise FormatError(file, _near(place, stream), str(e), "a pickle torch.save writes") from e
    except (EOFError, struct.error) as e:
        raise FormatError(file, _near(place, stream), "the pickle ends early (truncated?)") from e
    except pickle.UnpicklingError as e:
        if "truncated" in str(e):
            raise FormatError(
                file, _near(place, stream), "the pickle ends early (truncated?)"
            ) from e
        raise FormatError(file, _near(place, stream), f"damaged pickle ({e})") from e
    except MemoryError as e:
        raise FormatError(file, place, "the pickle builds more than the memory holds") from e
    except Exception as e:  # a stand-in or container called with values it cannot take
        raise FormatError(
            file, _near(place, stream), "damaged pickle (a value of the wrong kind)"
        ) from e


def _near(place: str, stream: Stream) -> str:
    try:
        return f"{place} near byte {stream.tell():,}"
    except (OSError, ValueError):
        return place
