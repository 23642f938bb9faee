"""Linux desktop integration for one user: the .desktop entry, the ONNX MIME type, the icons."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from xocview.errors import DesktopError
from xocview.resources import packaging_path, resource_path

__all__ = [
    "APP_ID",
    "JSON_MIME",
    "ONNX_MIME",
    "OWN_MIMES",
    "XdgDirs",
    "install",
    "launcher_command",
    "uninstall",
]

APP_ID = "xocview.desktop"
ONNX_MIME = "application/x-onnx"
JSON_MIME = "application/json"
# The types packaging/linux/xocview.xml defines, xocview their default application; JSON is
# shared with every editor, so xocview is only offered for it.
OWN_MIMES = (
    ONNX_MIME,
    "application/x-pytorch",
    "application/x-safetensors",
    "application/x-tflite",
    "application/x-keras",
    "application/x-tensorflow",
    "application/x-gguf",
)
# Types other programs own too (any HDF5 file is application/x-hdf5): xocview is offered.
OFFERED_MIMES = (JSON_MIME, "application/x-hdf5")
DEFAULTS = "Default Applications"
ADDED = "Added Associations"

# Characters that make the Desktop Entry spec require an Exec argument to be quoted.
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


@dataclass(frozen=True)
class XdgDirs:
    """The per-user XDG base directories that the integration writes into."""

    data_home: Path
    config_home: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> XdgDirs:
        """$XDG_DATA_HOME and $XDG_CONFIG_HOME, or their defaults; relative values are ignored
        as the XDG base directory spec asks."""
        env = os.environ if env is None else env
        home = Path(env.get("HOME") or Path.home())

        def pick(name: str, default: Path) -> Path:
            value = env.get(name, "")
            return Path(value) if value and Path(value).is_absolute() else default

        return cls(
            pick("XDG_DATA_HOME", home / ".local" / "share"),
            pick("XDG_CONFIG_HOME", home / ".config"),
        )

    @property
    def mimeapps(self) -> Path:
        return self.config_home / "mimeapps.list"

    def targets(self) -> list[Path]:
        """Every file the install writes (mimeapps.list is edited, not owned)."""
        return [dst for _, dst in self.sources()]

    def sources(self) -> list[tuple[str, Path]]:
        """(packaging/ or resources/ file, where it goes) for each installed file."""
        icons = self.data_home / "icons" / "hicolor" / "scalable"
        return [
            ("linux/xocview.desktop", self.data_home / "applications" / APP_ID),
            ("linux/xocview.xml", self.data_home / "mime" / "packages" / "xocview.xml"),
            ("xocview.svg", icons / "apps" / "xocview.svg"),
            ("xocview-document.svg", icons / "mimetypes" / "application-x-onnx.svg"),
        ]


def launcher_command() -> list[str]:
    """The command a file manager should run: absolute, because its PATH may lack our venv."""
    frozen = getattr(sys, "frozen", False)  # a PyInstaller build: the launcher is the program
    script = Path(sys.executable if frozen else sys.argv[0] if sys.argv else "")
    if script.stem in ("xocview", "xocview-cli") and script.is_file():
        gui = script.with_name("xocview" + script.suffix)  # not the console of xocview-cli
        return [str((gui if gui.is_file() else script).absolute())]
    found = shutil.which("xocview")
    return [found] if found else [sys.executable, "-m", "xocview"]


def exec_quote(arg: str) -> str:
    """One Exec argument as the Desktop Entry spec wants it, escaped again as a string value."""
    arg = arg.replace("%", "%%")
    if any(c in _RESERVED for c in arg):
        arg = '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'
    return arg.replace("\\", "\\\\")


def install(dirs: XdgDirs | None = None, launcher: Sequence[str] | None = None) -> list[str]:
    """Install the entry, MIME type and icons; make xocview the default for ONNX and offer it
    for JSON. Returns what was done, one line each; DesktopError names what failed."""
    dirs = dirs or XdgDirs.from_env()
    command = " ".join(exec_quote(a) for a in (launcher or launcher_command()))
    done = []
    for name, target in dirs.sources():
        data = _read_source(name)
        if name.endswith(".desktop"):
            text = re.sub(
                r"^(Exec=)xocview(?= |$)", lambda m: m[1] + command, data.decode(), flags=re.M
            )
            data = text.encode()
        _write(target, data)
        done.append(f"installed {target}")
    _edit_mimeapps(dirs.mimeapps, lambda text: _associate(text, add=True))
    own, offered = ", ".join(OWN_MIMES), ", ".join(OFFERED_MIMES)
    done.append(f"updated {dirs.mimeapps} (default for {own}; offered for {offered})")
    return done + _refresh(dirs)


def uninstall(dirs: XdgDirs | None = None) -> list[str]:
    """Remove exactly what ``install`` wrote and take xocview out of mimeapps.list."""
    dirs = dirs or XdgDirs.from_env()
    done = []
    for target in dirs.targets():
        if target.exists() or target.is_symlink():
            try:
                target.unlink()
            except OSError as e:
                raise DesktopError(f"{target}: cannot remove ({e.strerror})") from e
            done.append(f"removed {target}")
    if dirs.mimeapps.is_file() and _edit_mimeapps(
        dirs.mimeapps, lambda text: _associate(text, add=False)
    ):
        done.append(f"updated {dirs.mimeapps}")
    if not done:
        return ["nothing to remove: the desktop integration is not installed"]
    done += _refresh(dirs)
    try:
        _prune(dirs)
    except OSError as e:
        raise DesktopError(f"{e.filename}: cannot remove ({e.strerror})") from e
    return done


def _read_source(name: str) -> bytes:
    try:
        path = packaging_path(name) if name.startswith("linux/") else resource_path(name)
        return path.read_bytes()
    except OSError as e:
        raise DesktopError(f"{e}; reinstall xocview from its source tree") from e


def _write(target: Path, data: bytes) -> None:
    """Write through a temporary file, so an interrupted install leaves no half file."""
    tmp = target.with_name(target.name + ".tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise DesktopError(f"{target}: cannot write ({e.strerror})") from e


def _edit_mimeapps(path: Path, change: Callable[[str], str]) -> bool:
    """Apply ``change`` to mimeapps.list; a file left empty is removed. True if it changed."""
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        new = change(text)
        if new == text:
            return False
        if new.strip():
            _write(path, new.encode("utf-8"))
        else:
            path.unlink()
        return True
    except (OSError, UnicodeDecodeError) as e:
        raise DesktopError(f"{path}: cannot update ({e})") from e


def _associate(text: str, add: bool) -> str:
    """mimeapps.list with xocview first for its own types and last among JSON's added applications
    (``add``), or with every mention of xocview taken out."""

    def without(apps: list[str]) -> list[str]:
        return [a for a in apps if a != APP_ID]

    for mime in OWN_MIMES:
        text = set_list(
            text, DEFAULTS, mime, lambda apps: [APP_ID, *without(apps)] if add else without(apps)
        )
    for mime in OFFERED_MIMES:
        text = set_list(
            text, ADDED, mime, lambda apps: [*without(apps), APP_ID] if add else without(apps)
        )
    return text


def set_list(text: str, section: str, key: str, change: Callable[[list[str]], list[str]]) -> str:
    """``text`` (an INI file) with ``key``'s ;-separated list in ``section`` changed; other
    lines are kept as they are, an empty list removes the key."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.strip() == f"[{section}]"), None)
    if start is None:
        values = change([])
        if not values:
            return text
        sep = "\n" if text and not text.endswith("\n") else ""
        blank = "\n" if text.strip() else ""
        return f"{text}{sep}{blank}[{section}]\n{key}={';'.join(values)};\n"
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    at = next(
        (
            i
            for i in range(start + 1, end)
            if lines[i].split("=", 1)[0].strip() == key and "=" in lines[i]
        ),
        None,
    )
    old = [] if at is None else [v for v in lines[at].split("=", 1)[1].strip().split(";") if v]
    values = change(old)
    if values == old:
        return text
    line = f"{key}={';'.join(values)};"
    if at is None:  # after the section's last line that is not blank
        last = max((i for i in range(start, end) if lines[i].strip()), default=start)
        lines.insert(last + 1, line)
    elif values:
        lines[at] = line
    else:
        del lines[at]
        end -= 1
        if not any(ln.strip() for ln in lines[start + 1 : end]):  # nothing left in the section
            first = start - 1 if start > 0 and not lines[start - 1].strip() else start
            del lines[first:end]
    return "\n".join(lines) + "\n" if any(ln.strip() for ln in lines) else ""


def _prune(dirs: XdgDirs) -> None:
    """After an uninstall, drop caches that now describe nothing and the folders left empty, so
    that nothing of xocview's remains (update-mime-database rebuilds everything but packages/)."""
    mime, apps = dirs.data_home / "mime", dirs.data_home / "applications"
    if (mime / "packages").is_dir() and not any((mime / "packages").iterdir()):
        for entry in mime.iterdir():
            if entry.is_dir() and entry.name != "packages":
                shutil.rmtree(entry)
            elif entry.is_file():
                entry.unlink()
    if apps.is_dir() and [p.name for p in apps.iterdir()] == ["mimeinfo.cache"]:
        (apps / "mimeinfo.cache").unlink()
    for target in dirs.targets():
        folder = target.parent
        while folder != dirs.data_home and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def _refresh(dirs: XdgDirs) -> list[str]:
    """Rebuild the MIME database and the desktop-file cache where the tools exist."""
    env = {**os.environ, "XDG_DATA_HOME": str(dirs.data_home)}
    done = []
    for tool, folder in (
        ("update-mime-database", dirs.data_home / "mime"),
        ("update-desktop-database", dirs.data_home / "applications"),
    ):
        exe = shutil.which(tool)
        if exe is None:
            done.append(f"{tool} not found; skipped (the desktop picks changes up at next login)")
            continue
        if not folder.is_dir():
            continue
        try:
            proc = subprocess.run(
                [exe, str(folder)], capture_output=True, text=True, env=env, timeout=120
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            raise DesktopError(f"{tool} {folder}: {e}") from e
        # update-mime-database exits 0 even when it cannot parse a package file
        problem = [ln for ln in proc.stderr.splitlines() if "xocview.xml" in ln]
        if proc.returncode != 0 or problem:
            why = (problem or proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
            raise DesktopError(f"{tool} {folder}: {why}")
        done.append(f"ran {tool} {folder}")
    return done
