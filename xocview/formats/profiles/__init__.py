"""Profiles from other runtimes put onto a graph: onnxruntime's profile JSON, Chrome traces
(the PyTorch profiler's) and Model Explorer's node data, one module each, told apart by content.

``read_profile(path, graph)`` gives an ``ImportedProfile``: the values per node id (times in
milliseconds per pass, stored as ``performance.time.<source>``; a named metric as
``performance.<name>``) and an account of every event, matched or not.
"""

from xocview.formats.profiles.registry import PROFILE_FORMATS, detect_profile, read_profile
from xocview.formats.profiles.result import ImportedProfile, Unmatched

__all__ = ["PROFILE_FORMATS", "ImportedProfile", "Unmatched", "detect_profile", "read_profile"]
