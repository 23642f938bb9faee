"""ONNX models (``.onnx`` protobuf): the format contract the registry dispatches to.

``reader`` parses and sniffs, ``build`` turns the ModelProto into the shared model with the
help of ``attrs``, ``meta``, ``types``, ``weights``, ``data`` and ``text``; ``check`` finds
what is wrong with a model. ``writer`` saves a graph as ONNX with the help of ``nesting``,
``assemble``, ``attr_protos``, ``value_protos``, ``opsets``, ``stale_types`` and ``sidecar``
(the metadata ONNX has no field for, which ``build`` puts back). Inside this package
``import onnx`` is the onnx package: imports here are absolute.
"""

from xocview.formats.onnx.reader import (
    EXPANDS_DOTTED_KEYS,
    EXTENSIONS,
    NAME,
    load,
    read_findings,
    sniff,
)
from xocview.formats.onnx.writer import save

__all__ = [
    "EXPANDS_DOTTED_KEYS",
    "EXTENSIONS",
    "NAME",
    "load",
    "read_findings",
    "save",
    "sniff",
]
