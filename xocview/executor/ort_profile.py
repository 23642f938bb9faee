"""onnxruntime's profile file (what ``SessionOptions.enable_profiling`` writes) read as kernel
times per node of our graph.

The events' parsing and their attribution to nodes (fusion names, NCHWc kernels...) live in
``xocview.model.analyses.ort_kernels``, which the profile import of ``formats`` shares; this
module reads the file the engine's session wrote and keeps the names the engine and its tests
have always imported from here.
"""

from __future__ import annotations

import json
from pathlib import Path

from xocview.errors import FormatError
from xocview.model.analyses.ort_kernels import (
    Attribution,
    Kernel,
    OrtProfile,
    attribute,
    median_times,
    parse_profile,
)

__all__ = [
    "Attribution",
    "Kernel",
    "OrtProfile",
    "attribute",
    "median_times",
    "parse_profile",
    "read_profile",
]


def read_profile(path: str | Path) -> OrtProfile:
    """The profile in ``path``; FormatError when it is not onnxruntime's trace JSON."""
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        raise FormatError(str(path), "", f"cannot read the file ({e.strerror or e})") from e
    except (ValueError, UnicodeDecodeError) as e:
        raise FormatError(str(path), "", f"not JSON ({e})", "onnxruntime's profile") from e
    return parse_profile(data, str(path))
