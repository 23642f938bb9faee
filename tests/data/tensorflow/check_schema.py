"""Check xocview's TensorFlow message schema against TensorFlow's own descriptors.

Run with a Python that has tensorflow: ``python tests/data/tensorflow/check_schema.py``.
Every field xocview declares must have TensorFlow's number, name, type, repetition and oneof;
every DataType must have TensorFlow's number. Prints the mismatches; exits 1 when any.
"""

from __future__ import annotations

import sys

import tensorflow  # noqa: F401  (registers TensorFlow's messages in the default pool)
from google.protobuf import descriptor_pool
from tensorflow.core.protobuf import tensor_bundle_pb2  # noqa: F401  (not loaded by default)

from xocview.formats.tensorflow.protos import message
from xocview.formats.tensorflow.schema import DATA_TYPES

_TRACKABLE = "tensorflow.TrackableObjectGraph.TrackableObject"
THEIRS = {
    "Dim": "tensorflow.TensorShapeProto.Dim",
    "ListValue": "tensorflow.AttrValue.ListValue",
    "ExperimentalDebugInfo": "tensorflow.NodeDef.ExperimentalDebugInfo",
    "ArgDef": "tensorflow.OpDef.ArgDef",
    "AttrDef": "tensorflow.OpDef.AttrDef",
    "MetaInfoDef": "tensorflow.MetaGraphDef.MetaInfoDef",
    "ObjectReference": f"{_TRACKABLE}.ObjectReference",
    "TrackableObject": _TRACKABLE,
    "SerializedTensor": f"{_TRACKABLE}.SerializedTensor",
    "SlotVariableReference": f"{_TRACKABLE}.SlotVariableReference",
    "Extent": "tensorflow.TensorSliceProto.Extent",
}


def main() -> int:
    pool = descriptor_pool.Default()
    from xocview.formats.tensorflow.protos import _file

    bad = []
    for m in _file().message_type:
        mine = message(m.name).DESCRIPTOR
        theirs = pool.FindMessageTypeByName(THEIRS.get(m.name, f"tensorflow.{m.name}"))
        for f in mine.fields:
            t = theirs.fields_by_number.get(f.number)
            same = t is not None and (t.name, t.type, t.is_repeated) == (
                f.name,
                f.type,
                f.is_repeated,
            )
            if not same:
                bad.append(f"{m.name}.{f.name} = {f.number}")
        print(f"{m.name}: {len(mine.fields)} of {len(theirs.fields)} fields")
    dtypes = pool.FindEnumTypeByName("tensorflow.DataType")
    bad += [v.name for v in dtypes.values if DATA_TYPES.get(v.name) != v.number]
    print("mismatches:", bad or "none")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
