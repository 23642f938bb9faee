"""XOC JSON, the project's own exchange format: the format contract the registry uses.

``reader`` reads and checks (and saves through ``writer``, which writes the canonical text).
"""

from xocview.formats.xoc.reader import (
    EXPANDS_DOTTED_KEYS,
    EXTENSIONS,
    NAME,
    dumps,
    load,
    read_findings,
    save,
    sniff,
    validation_place,
)

__all__ = [
    "EXPANDS_DOTTED_KEYS",
    "EXTENSIONS",
    "NAME",
    "dumps",
    "load",
    "read_findings",
    "save",
    "sniff",
    "validation_place",
]
