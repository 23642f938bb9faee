"""xocview: view, edit and profile neural-network computation graphs.

The Python API (``xocview.load``, ``render``, ``show``, ``profile``, ``diff``, ``overlay``,
``write_node_data``) is offered lazily: ``import xocview`` stays cheap and imports neither Qt
nor onnx until a call needs them (the command line and the window import this package for
``__version__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xocview.version import __version__

__all__ = [
    "__version__",
    "diff",
    "load",
    "overlay",
    "profile",
    "render",
    "show",
    "write_node_data",
]

_API = frozenset(__all__) - {"__version__"}

if TYPE_CHECKING:
    from xocview.api import diff, load, overlay, profile, render, show, write_node_data


def __getattr__(name: str) -> Any:
    if name in _API:
        from xocview import api

        return getattr(api, name)
    raise AttributeError(f"module 'xocview' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
