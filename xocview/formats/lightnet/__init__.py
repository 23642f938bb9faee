"""LightNet JSON IR: the format contract the registry dispatches to.

``reader`` sniffs and loads, ``check`` type-checks the ops array into records, ``build`` links
them by tensor name into the shared model.
"""

from xocview.formats.lightnet.build import LIGHTNET_DTYPES
from xocview.formats.lightnet.reader import (
    EXPANDS_DOTTED_KEYS,
    EXTENSIONS,
    NAME,
    load,
    read_findings,
    sniff,
)

__all__ = [
    "EXPANDS_DOTTED_KEYS",
    "EXTENSIONS",
    "LIGHTNET_DTYPES",
    "NAME",
    "load",
    "read_findings",
    "sniff",
]
