"""packaging/linux/system-deps.sh knows every system library the installed Qt really loads.

The script checks a fixed table of libraries; a PySide6 upgrade that needs one more would make
`make run` fail on a fresh machine while this machine, which has it, stays green. Reading the
ELF NEEDED entries of the Qt libraries and platform plugins catches that here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "packaging" / "linux" / "system-deps.sh"

# Part of every Debian system (libc6, libgcc-s1, libstdc++6, zlib1g, libzstd1: all "required").
BASE = {
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "libc.so.6",
    "libm.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "librt.so.1",
    "libresolv.so.2",
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libz.so.1",
    "libzstd.so.1",
}

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or shutil.which("readelf") is None,
    reason="reads ELF files of the Linux PySide6 wheel with readelf",
)


def _table() -> tuple[set[str], set[str]]:
    text = SCRIPT.read_text()
    table = set(re.findall(r"\[(lib[^\]]+)\]=", text))
    offscreen = re.search(r"offscreen_libs=\(([^)]*)\)", text)
    assert offscreen is not None
    return table, set(offscreen.group(1).split())


def _needed(files: list[Path]) -> set[str]:
    out: set[str] = set()
    for f in files:
        dump = subprocess.run(
            ["readelf", "-d", str(f)], capture_output=True, text=True, check=True
        ).stdout
        out.update(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dump))
    return out


def _qt() -> tuple[Path, set[str]]:
    import PySide6

    root = Path(PySide6.__file__).parent
    bundled = {p.name for p in (root / "Qt" / "lib").glob("*.so*")}
    bundled |= {p.name for p in root.glob("*.so*")}
    bundled |= {p.name for p in root.parent.glob("shiboken6/*.so*")}
    return root, bundled


def test_window_libraries_are_all_in_the_table() -> None:
    root, bundled = _qt()
    table, _ = _table()
    files = [root / "Qt" / "plugins" / "platforms" / "libqxcb.so"]
    files += [
        root / "Qt" / "lib" / f"libQt6{m}.so.6"
        for m in ("Core", "Gui", "Widgets", "Svg", "DBus", "XcbQpa")
    ]
    files += [root / f"Qt{m}.abi3.so" for m in ("Core", "Gui", "Widgets", "Svg")]
    files = [f for f in files if f.exists()]
    assert files, f"no Qt libraries found under {root}"
    missing = _needed(files) - table - BASE - bundled
    assert not missing, f"add these to {SCRIPT.name}'s table: {sorted(missing)}"


def test_offscreen_libraries_are_checked_in_test_mode() -> None:
    root, bundled = _qt()
    _, offscreen = _table()
    files = [root / "Qt" / "plugins" / "platforms" / "libqoffscreen.so"]
    files += [root / "Qt" / "lib" / f"libQt6{m}.so.6" for m in ("Core", "Gui", "Widgets", "Svg")]
    files = [f for f in files if f.exists()]
    missing = _needed(files) - offscreen - BASE - bundled
    assert not missing, f"add these to {SCRIPT.name}'s offscreen_libs: {sorted(missing)}"


def test_prints_the_apt_line_when_it_cannot_install(tmp_path: Path) -> None:
    """Without root, sudo or a terminal, the script names what to install and stops."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A machine where nothing is installed: ldconfig knows no library, no font, no tools;
    # `id -u` says we are a user and there is no sudo.
    (bin_dir / "ldconfig").write_text("#!/bin/sh\nexit 0\n")
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    for name in ("ldconfig", "id"):
        (bin_dir / name).chmod(0o755)
    path = f"{bin_dir}:/usr/bin:/bin"
    env = {"PATH": path, "DISPLAY": ":0"}
    for tool in ("sudo", "fc-list", "xdg-mime", "mimetype"):
        if shutil.which(tool, path="/usr/bin:/bin"):
            (bin_dir / tool).write_text("#!/bin/sh\nexit 127\n")
    res = subprocess.run(
        ["bash", str(SCRIPT), "gui"],
        env={**env, "PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert res.returncode == 1, res.stderr
    assert "sudo apt-get install -y --no-install-recommends" in res.stderr
    assert "libxcb-cursor0" in res.stderr and "libegl1" in res.stderr
