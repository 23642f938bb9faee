"""How much memory a run may use: the default budget, ``--max-memory`` sizes, and their text.

A file declares shapes, and a damaged or hostile one can declare a weight of 10^9 elements;
allocating it first and failing later costs minutes and gigabytes. The executor therefore
compares its estimate with a budget before it allocates anything: by default half the memory
the system has available, so that the rest of the desktop keeps working.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "DEFAULT_FRACTION",
    "FALLBACK_AVAILABLE",
    "address_space_limit",
    "available_memory",
    "default_budget",
    "format_size",
    "parse_size",
    "resolve_budget",
]

# The share of the available memory a run may use when the caller sets no budget.
DEFAULT_FRACTION = 0.5
# Assumed available memory where the system does not tell (a small laptop's worth).
FALLBACK_AVAILABLE = 4 * 2**30
_MEMINFO = Path("/proc/meminfo")
_STATUS = Path("/proc/self/status")
_CGROUP = Path("/sys/fs/cgroup")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def _meminfo_available(path: Path = _MEMINFO) -> int | None:
    """MemAvailable from /proc/meminfo in bytes (Linux), or None when it cannot be read."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


def _sysconf_available() -> int | None:
    """Free physical pages times the page size (other Unix systems), or None."""
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * size if pages > 0 and size > 0 else None


def _cgroup_available(root: Path = _CGROUP) -> int | None:
    """Room left under a cgroup v2 memory limit (containers), or None when there is none."""
    try:
        limit = (root / "memory.max").read_text(encoding="ascii").strip()
        used = (root / "memory.current").read_text(encoding="ascii").strip()
    except OSError:
        return None
    if not limit.isdigit() or not used.isdigit():
        return None  # "max": no limit
    return max(0, int(limit) - int(used))


def _rlimit_available() -> int | None:
    """Room left under the process's address-space limit (``ulimit -v``), or None."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    used = 0
    try:
        for line in _STATUS.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmSize:") and line.split()[1].isdigit():
                used = int(line.split()[1]) * 1024
    except OSError:
        pass
    return max(0, soft - used)


def available_memory() -> int:
    """Bytes a new allocation can get now: the system's available memory, within a container's
    and the process's limits; a fixed guess where the system does not say."""
    system = _meminfo_available() or _sysconf_available() or FALLBACK_AVAILABLE
    limits = [x for x in (_cgroup_available(), _rlimit_available()) if x is not None]
    return min([system, *limits])


def default_budget() -> int:
    """The budget of a run that sets none: ``DEFAULT_FRACTION`` of the available memory."""
    return int(available_memory() * DEFAULT_FRACTION)


def resolve_budget(max_memory: int | None) -> int | None:
    """The byte limit of a run: ``None`` gives the default budget, ``0`` (or less) no limit."""
    if max_memory is None:
        return default_budget()
    return int(max_memory) if max_memory > 0 else None


def parse_size(text: str) -> int:
    """Bytes of a size such as ``2G``, ``512M``, ``1.5GB``, ``64k`` or ``1000``; 0 for ``0`` or
    ``none`` (no limit). Units are powers of 1024.

    Raises ValueError naming the accepted forms.
    """
    if text.strip().lower() in ("none", "unlimited", "off"):
        return 0
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a size; expected e.g. 2G, 512M, 64k, 0 or none")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: int | float) -> str:
    """``n`` bytes as a short text with the unit that suits it (``3.7 GB``, ``512.0 MB``)."""
    if n != n:  # NaN: a size no arithmetic could tell
        return "an unknown size"
    if n >= 2**60:  # a damaged shape's size: no unit helps, and a huge int has no float
        return f"{float(min(n, 1e308)):.3g} B" if n < 10**308 else "more than 1e308 B"
    for unit, scale in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("kB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


# Address space a run may add over its budget: the kernels' own temporaries that no declared
# shape tells (a padded input, a column buffer), thread arenas and BLAS buffers.
_HEADROOM = 2**30
_limit_lock = threading.Lock()
_limit_users = 0
_limit_saved: tuple[int, int] | None = None


@contextlib.contextmanager
def address_space_limit(budget: int | None) -> Iterator[None]:
    """While a budgeted run lasts, cap the process's address space at what it uses now plus
    the budget and a headroom (Linux; never raising a lower limit already set).

    The estimate counts the tensors the file declares; a damaged attribute (pads of 10^6) can
    still make a kernel ask for tens of gigabytes that no shape announced. Under the cap that
    request fails at once with MemoryError, which the runtime reports as the node's error,
    instead of growing until the machine swaps. Runs that overlap share the first one's cap.
    """
    global _limit_users, _limit_saved
    if budget is None or not sys.platform.startswith("linux"):
        yield
        return
    import resource

    with _limit_lock:
        if _limit_users == 0:
            used = _vm_size()
            soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            cap = -1 if used is None else used + budget + _HEADROOM
            fits = cap > 0 and (hard == resource.RLIM_INFINITY or cap <= hard)
            if fits and (soft == resource.RLIM_INFINITY or cap < soft):
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
                    _limit_saved = (soft, hard)
        _limit_users += 1
    try:
        yield
    finally:
        with _limit_lock:
            _limit_users -= 1
            if _limit_users == 0 and _limit_saved is not None:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(resource.RLIMIT_AS, _limit_saved)
                _limit_saved = None


def _vm_size() -> int | None:
    """The process's address space in bytes (VmSize), or None where it cannot be read."""
    try:
        for line in _STATUS.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
