"""The standalone build (packaging/xocview.spec, as `make package` runs it) works without Python."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

EXE = ".exe" if sys.platform == "win32" else ""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dist/xocview built once into a temporary folder (about 20 s here)."""
    if importlib.util.find_spec("PyInstaller") is None:
        pytest.skip("PyInstaller is not installed: pip install -e '.[package]' (make package does)")
    out = tmp_path_factory.mktemp("package")
    spec = REPO / "packaging" / "xocview.spec"
    build = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
         "--distpath", str(out / "dist"), "--workpath", str(out / "build"), str(spec)],
        capture_output=True, text=True, cwd=REPO, timeout=1800,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr[-3000:]
    return out / "dist" / "xocview"


def bare_env(tmp_path: Path) -> dict[str, str]:
    """No virtualenv, no PYTHONPATH: the folder must bring everything itself."""
    keep = ("PATH", "SYSTEMROOT", "TEMP", "TMP", "LANG")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(HOME=str(tmp_path), QT_QPA_PLATFORM="offscreen")
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    return env


def test_the_build_reports_its_version(built: Path, tmp_path: Path) -> None:
    from xocview import __version__

    for launcher in ("xocview", "xocview-cli"):
        done = subprocess.run(
            [str(built / (launcher + EXE)), "--version"],
            capture_output=True, text=True, cwd=tmp_path, env=bare_env(tmp_path), timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"xocview {__version__}"


def test_the_build_renders_a_sample_headless(built: Path, tmp_path: Path) -> None:
    out = tmp_path / "tiny.png"
    sample = REPO / "sample_graphs" / "tiny_transformer.json"

    done = subprocess.run(
        [str(built / ("xocview" + EXE)), "render", str(sample), str(out)],
        capture_output=True, text=True, cwd=tmp_path, env=bare_env(tmp_path), timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out} (")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_the_build_carries_its_data_and_leaves_test_tools_out(built: Path) -> None:
    names = {p.name for p in built.rglob("*")}
    assert {"ops.json", "xocview.svg", "xocview-document.svg", "xocview.desktop"} <= names
    platforms = {p.name for p in built.rglob("platforms/*")}
    assert any("offscreen" in n for n in platforms) and any("xcb" in n for n in platforms)
    leaked = [n for n in names if n.startswith(("onnxruntime", "pytest", "hypothesis", "tests"))]
    assert not leaked
