"""ONNX models (``.onnx`` protobuf): the format contract the registry dispatches to.

``reader`` parses and sniffs, ``build`` turns the ModelProto into the shared model with the
help of ``attrs``, ``meta``, ``types``, ``weights``, ``data`` and ``text``; ``check`` finds
what is wrong with a model. Inside this package ``import onnx`` is the onnx package: imports
here are absolute.
"""

from xocview.formats.onnx.reader import (
    EXPANDS_DOTTED_KEYS,
    EXTENSIONS,
    NAME,
    load,
    read_findings,
    sniff,
)

__all__ = ["EXPANDS_DOTTED_KEYS", "EXTENSIONS", "NAME", "load", "read_findings", "sniff"]
