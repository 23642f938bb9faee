"""Checked reading of a TFLite flatbuffer held in a read-only memory map.

The ``tflite`` package's generated readers trust every offset they follow: a damaged file
makes them raise ``struct.error`` or ``IndexError`` deep inside, or return a vector length in
the billions. ``Flat`` runs each read under the place it reads (``subgraphs[0].operators[12]``)
and turns those failures into a FormatError naming the file and that place, and checks every
vector's length against the file's size before anything loops over it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from xocview.errors import FormatError

__all__ = ["TENSOR_TYPES", "Flat", "tensor_type"]

T = TypeVar("T")

# TensorType (the LiteRT schema) -> the shared model's dtype names.
TENSOR_TYPES: dict[int, str] = {
    0: "float32",
    1: "float16",
    2: "int32",
    3: "uint8",
    4: "int64",
    5: "string",
    6: "bool",
    7: "int16",
    8: "complex64",
    9: "int8",
    10: "double",
    11: "complex128",
    12: "uint64",
    13: "resource",
    14: "variant",
    15: "uint32",
    16: "uint16",
    17: "int4",
    18: "bfloat16",
    19: "int2",
}

# What a damaged flatbuffer makes the generated readers raise.
_READ_ERRORS = (struct.error, IndexError, ValueError, TypeError, OverflowError, AttributeError)


def tensor_type(code: int) -> str | None:
    return TENSOR_TYPES.get(code)


class Flat:
    """The file's bytes (a memory map) and its name, for reads that fail with a place."""

    def __init__(self, buf: Any, name: str, fd: int | None = None) -> None:
        self.buf = buf
        self.name = name
        self.size = len(buf)
        # A buffer's length sits in front of its data: read through the map, each one faults
        # in the data's first pages (a whole large folio of the page cache), and a 264 MB
        # model's open touched 150 MB. Read with pread, the map stays untouched.
        self.fd = fd

    def error(self, place: str, problem: str, expected: str | None = None) -> FormatError:
        return FormatError(self.name, place, problem, expected)

    @contextmanager
    def at(self, place: str) -> Iterator[None]:
        """Reads in this block that fail are reported at ``place``."""
        try:
            yield
        except FormatError:
            raise
        except _READ_ERRORS as e:
            raise self._outside(place) from e

    def get(self, place: str, read: Callable[[], T]) -> T:
        # try/except rather than ``at``: a with-block costs more than most reads it guards
        try:
            return read()
        except _READ_ERRORS as e:
            raise self._outside(place) from e

    def item(self, place: str, read: Callable[[int], Any], k: int) -> Any:
        """Element ``k`` of a vector of tables (``model.Subgraphs``)."""
        try:
            return read(k)
        except _READ_ERRORS as e:
            raise self._outside(place) from e

    def _outside(self, place: str) -> FormatError:
        return self.error(
            place, "an offset or length points outside the file", "a whole TFLite flatbuffer"
        )

    def count(self, place: str, read: Callable[[], int], item: int = 4) -> int:
        """A vector's length, checked to fit in the file (``item`` bytes per element)."""
        n = self.get(place, read)
        if not isinstance(n, int) or n < 0 or n * item > self.size:
            raise self.error(place, f"a vector of {n} elements is longer than the file")
        return n

    def text(self, place: str, read: Callable[[], bytes | None]) -> str:
        raw = self.get(place, read)
        return raw.decode("utf-8", "replace") if raw else ""

    def ints(self, place: str, read_np: Callable[[], Any], length: Callable[[], int]) -> list[int]:
        """An int vector (shape, perm, ...) as a list; [] when absent."""
        if self.count(place, length) == 0:
            return []
        value = self.get(place, read_np)
        if not isinstance(value, np.ndarray):
            return []
        return [int(v) for v in value.tolist()]

    def floats(
        self, place: str, read_np: Callable[[], Any], length: Callable[[], int]
    ) -> list[float]:
        if self.count(place, length) == 0:
            return []
        value = self.get(place, read_np)
        return [float(v) for v in value.tolist()] if isinstance(value, np.ndarray) else []

    def buffer_fields(self, place: str, table: Any) -> tuple[int, int, int, int]:
        """A Buffer table's (data start, data bytes, offset, size), each 0 when absent.

        Read with pread when the file's descriptor is known: a Buffer table sits against its
        weights, and touching it through the map faults in the data around it (a 264 MB
        model's open mapped 150 MB of weights it never read)."""
        if self.fd is None:
            with self.at(place):
                offset, size = int(table.Offset()), int(table.Size())
            start, n = self.vector_span(f"{place}.data", table, 4)
            return start, n, offset, size
        pos = table._tab.Pos
        vtable = pos - self._int(place, pos, 4, signed=True)
        vsize = self._int(place, vtable, 2)
        slots = [
            self._int(place, vtable + 4 + 2 * k, 2) if 4 + 2 * k < vsize else 0 for k in range(3)
        ]
        start = n = 0
        if slots[0]:
            at = pos + slots[0]
            start = at + self._int(place, at, 4) + 4
            n = self._int(f"{place}.data", start - 4, 4)
            if start + n > self.size:
                raise self.error(
                    f"{place}.data", f"{n} bytes at offset {start} run past the end of the file"
                )
        offset = self._int(place, pos + slots[1], 8) if slots[1] else 0
        size = self._int(place, pos + slots[2], 8) if slots[2] else 0
        return start, n, offset, size

    def _int(self, place: str, at: int, width: int, signed: bool = False) -> int:
        raw = os.pread(self.fd, width, at) if self.fd is not None and at >= 0 else b""
        if len(raw) != width:
            raise self._outside(place)
        return int.from_bytes(raw, "little", signed=signed)

    def _length(self, tab: Any, o: int, start: int) -> int:
        if self.fd is None or start < 4:
            return int(tab.VectorLen(o))
        raw = os.pread(self.fd, 4, start - 4)
        return int.from_bytes(raw, "little") if len(raw) == 4 else -1

    def vector_span(self, place: str, table: Any, slot: int) -> tuple[int, int]:
        """(start, length in elements) of the vector in ``slot`` of a generated table, checked
        to lie in the file; (0, 0) when the field is absent."""
        with self.at(place):
            tab = table._tab
            o = tab.Offset(slot)
            if not o:
                return 0, 0
            start = tab.Vector(o)
            n = self._length(tab, o, start)
        if start < 0 or n < 0 or start + n > self.size:
            raise self.error(place, f"{n} bytes at offset {start} run past the end of the file")
        return start, n
