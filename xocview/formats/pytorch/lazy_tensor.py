"""Tensors of a PyTorch pickle as records of where their values are, read on first use.

A torch tensor is a view of a storage: an element offset, a shape and strides over a flat run
of values (several tensors may share one storage, a transposed weight is a strided view). The
records keep just that; ``values()`` reads the storage's bytes (memory-mapped where possible)
and makes the view, after checking that it stays inside the storage, so that a hostile
stride or offset cannot read past it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from xocview.errors import FormatError, shorten
from xocview.model.dtypes import DTYPES, numpy_type

__all__ = ["LazyStorage", "TensorRecord"]

# A view may repeat a storage's values (stride 0, as ``expand`` makes) but not absurdly: a
# copy of it is made, so its size is bounded by the storage's and this many extra elements.
_EXPANDED_SLACK = 1 << 24


class LazyStorage:
    """One storage of a file: its key, element type (XOC name) and count; ``read`` gives its
    bytes (a uint8 array) when first asked. ``place`` names it in messages."""

    __slots__ = ("_read", "big_endian", "dtype", "file", "key", "numel", "place", "start")

    def __init__(
        self,
        key: str,
        dtype: str,
        numel: int,
        read: Callable[[], np.ndarray],
        file: str,
        place: str,
        big_endian: bool = False,
        start: int = 0,
    ) -> None:
        self.key, self.dtype, self.numel, self.start = key, dtype, numel, start
        self.file, self.place, self.big_endian = file, place, big_endian
        self._read = read

    @property
    def itemsize(self) -> int:
        return max((DTYPES[self.dtype].bits or 8) // 8, 1)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize

    def view(self, offset: int, numel: int) -> LazyStorage:
        """Elements ``offset`` .. ``offset + numel`` of this storage (torch < 1.6 views)."""
        if offset + numel > self.numel:
            raise FormatError(
                self.file,
                self.place,
                f"a view of {offset + numel:,} elements over a storage of {self.numel:,}",
            )
        return LazyStorage(
            self.key,
            self.dtype,
            numel,
            self._read,
            self.file,
            self.place,
            self.big_endian,
            self.start + offset,
        )

    def raw(self) -> np.ndarray:
        """The storage's bytes as a uint8 array; FormatError when the file holds fewer."""
        data = self._read()
        begin, end = self.start * self.itemsize, (self.start + self.numel) * self.itemsize
        if data.size < end:
            raise FormatError(
                self.file,
                self.place,
                f"holds {data.size:,} bytes, fewer than the {end:,} of its "
                f"{self.start + self.numel:,} {self.dtype} values (truncated?)",
                "a storage as long as its element count",
            )
        return data[begin:end]

    def __setstate__(self, state: object) -> None:
        raise FormatError(self.file, self.place, "a pickle that rewrites a storage's fields")

    def __repr__(self) -> str:
        return f"LazyStorage({self.key!r}, {self.dtype}, {self.numel})"


class TensorRecord:
    """A tensor of a pickle: ``dtype`` (XOC name), ``shape``, ``stride`` and ``offset`` (in
    elements) over ``storage``; ``values()`` reads it. ``storage`` is None for a tensor saved
    without data (a meta tensor)."""

    __slots__ = ("dtype", "offset", "parameter", "requires_grad", "shape", "storage", "stride")

    def __init__(
        self,
        storage: LazyStorage | None,
        dtype: str,
        offset: int,
        shape: tuple[int, ...],
        stride: tuple[int, ...],
        requires_grad: bool = False,
    ) -> None:
        self.storage, self.dtype, self.offset = storage, dtype, offset
        self.shape, self.stride = shape, stride
        self.requires_grad = requires_grad
        self.parameter = False

    def __setstate__(self, state: object) -> None:
        place = self.storage.place if self.storage else ""
        file = self.storage.file if self.storage else ""
        raise FormatError(file, place, "a pickle that rewrites a tensor's fields")

    def __repr__(self) -> str:
        return f"TensorRecord({self.dtype}, {list(self.shape)})"

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def check(self) -> None:
        """FormatError when the view leaves its storage or its dtype cannot be read: told
        from the pickle and the storage's size alone, before any value is read."""
        storage = self.storage
        if storage is None:
            return
        dt = numpy_type(self.dtype)
        if dt is None or dt.itemsize * 8 != DTYPES[self.dtype].bits:
            raise FormatError(storage.file, storage.place, f"{self.dtype} values cannot be read")
        count = storage.nbytes // dt.itemsize
        if self.numel == 0:
            return
        last = self.offset + sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True))
        if last >= count:
            raise FormatError(
                storage.file,
                storage.place,
                f"a tensor of shape {_dims(self.shape)}, stride {_dims(self.stride)} and "
                f"offset {self.offset:,} reaches element {last:,} of a storage of {count:,}",
                "a view inside its storage",
            )
        if self.numel > count + _EXPANDED_SLACK:
            raise FormatError(
                storage.file,
                storage.place,
                f"a tensor of {self.numel:,} elements repeating a storage of {count:,}",
                "a view no larger than its storage",
            )

    def values(self) -> np.ndarray:
        """The tensor's values, read-only: a view of the memory-mapped storage when it is
        contiguous (a 3 GB weight is not copied), else a contiguous copy. Raises FormatError
        for a damaged file."""
        storage = self.storage
        if storage is None:
            raise FormatError("", "", "a tensor saved without values (a meta tensor)")
        self.check()
        dt = numpy_type(self.dtype)
        assert dt is not None  # check() refused the others
        if self.numel == 0:
            return np.zeros(self.shape, dt)
        raw = storage.raw()
        stored = dt.newbyteorder(">") if storage.big_endian and dt.itemsize > 1 else dt
        # as_strided cannot take ml_dtypes' types (bf16, float8): stride an unsigned integer
        # view of the same width, then view it as the tensor's type
        size = dt.itemsize
        carrier = np.dtype(f"u{size}") if size in (1, 2, 4, 8) else stored
        flat = raw[: raw.size - raw.size % size].view(carrier)
        view = np.lib.stride_tricks.as_strided(
            flat[self.offset :],
            self.shape,
            tuple(s * size for s in self.stride),
            writeable=False,
        ).view(stored)
        if stored is not dt:
            return view.astype(dt)
        if view.flags.c_contiguous:  # unaligned too (legacy files): numpy reads those
            return view
        out = view.copy()  # C order; ascontiguousarray would make a scalar 1-d
        out.flags.writeable = False
        return out


def _dims(values: tuple[int, ...]) -> str:
    return shorten("x".join(str(v) for v in values) or "scalar")
