"""Write small TFLite flatbuffers field by field (slots of the LiteRT schema), for hostile and
big files that the TensorFlow converter would never write."""

from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np


@dataclass
class T:
    """One tensor: shape, TensorType code, buffer index, name."""

    shape: list[int]
    type: int = 0
    buffer: int = 0
    name: str = "t"


@dataclass
class Op:
    opcode: int
    inputs: list[int]
    outputs: list[int]


@dataclass
class Buf:
    """A buffer: inline ``data``, or ``offset``/``size`` pointing past the flatbuffer."""

    data: bytes | None = None
    offset: int = 0
    size: int = 0


@dataclass
class Spec:
    tensors: list[T]
    ops: list[Op] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)  # builtin codes
    buffers: list[Buf] = field(default_factory=lambda: [Buf()])
    inputs: list[int] = field(default_factory=lambda: [0])
    outputs: list[int] = field(default_factory=lambda: [0])


def _ints(b: flatbuffers.Builder, values: list[int]) -> int:
    return b.CreateNumpyVector(np.asarray(values, np.int32))


def _tables(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def build(spec: Spec) -> bytes:
    """The flatbuffer of ``spec`` with file identifier TFL3."""
    b = flatbuffers.Builder(1024)
    tensors = []
    for t in spec.tensors:
        name, shape = b.CreateString(t.name), _ints(b, t.shape)
        b.StartObject(8)
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        b.PrependInt8Slot(1, t.type, -1)
        b.PrependUint32Slot(2, t.buffer, 0)
        b.PrependUOffsetTRelativeSlot(3, name, 0)
        tensors.append(b.EndObject())
    ops = []
    for op in spec.ops:
        ins, outs = _ints(b, op.inputs), _ints(b, op.outputs)
        b.StartObject(3)
        b.PrependUint32Slot(0, op.opcode, 0)
        b.PrependUOffsetTRelativeSlot(1, ins, 0)
        b.PrependUOffsetTRelativeSlot(2, outs, 0)
        ops.append(b.EndObject())
    tvec, ovec = _tables(b, tensors), _tables(b, ops)
    ins, outs, name = _ints(b, spec.inputs), _ints(b, spec.outputs), b.CreateString("main")
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, tvec, 0)
    b.PrependUOffsetTRelativeSlot(1, ins, 0)
    b.PrependUOffsetTRelativeSlot(2, outs, 0)
    b.PrependUOffsetTRelativeSlot(3, ovec, 0)
    b.PrependUOffsetTRelativeSlot(4, name, 0)
    subgraphs = _tables(b, [b.EndObject()])
    codes = []
    for c in spec.codes:
        b.StartObject(4)
        b.PrependInt8Slot(0, min(c, 127), 0)
        b.PrependInt32Slot(3, c, 0)
        codes.append(b.EndObject())
    cvec = _tables(b, codes)
    bufs = []
    for buf in spec.buffers:
        data = b.CreateByteVector(buf.data) if buf.data else 0
        b.StartObject(3)
        if data:
            b.PrependUOffsetTRelativeSlot(0, data, 0)
        b.PrependUint64Slot(1, buf.offset, 0)
        b.PrependUint64Slot(2, buf.size, 0)
        bufs.append(b.EndObject())
    bvec = _tables(b, bufs)
    b.StartObject(5)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(1, cvec, 0)
    b.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
    b.PrependUOffsetTRelativeSlot(4, bvec, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    return bytes(b.Output())
