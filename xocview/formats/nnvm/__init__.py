"""NNVM graph JSON (MXNet symbol files, TVM graphs): the format contract the registry uses.

``reader`` checks the document, ``build`` (with ``entries`` for TVM's per-entry attributes)
turns it into the shared model.
"""

from xocview.formats.nnvm.reader import (
    EXPANDS_DOTTED_KEYS,
    EXTENSIONS,
    MAX_OUTPUTS,
    NAME,
    load,
    read_findings,
    sniff,
)

__all__ = [
    "EXPANDS_DOTTED_KEYS",
    "EXTENSIONS",
    "MAX_OUTPUTS",
    "NAME",
    "load",
    "read_findings",
    "sniff",
]
