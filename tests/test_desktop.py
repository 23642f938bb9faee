"""xocview --install-desktop / --uninstall-desktop in temporary XDG directories, checked with the
freedesktop tools (xdg-mime, desktop-file-validate) that a file manager's choice rests on."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from xocview.desktop import APP_ID, OFFERED_MIMES, OWN_MIMES, XdgDirs, install, set_list

DESKTOP_FILE = REPO / "packaging" / "linux" / "xocview.desktop"


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not installed (apt-get install xdg-utils "
            "shared-mime-info desktop-file-utils libfile-mimeinfo-perl)"
        )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user with empty XDG directories and no desktop environment (xdg-mime's generic mode)."""
    e = {k: v for k, v in os.environ.items() if k not in ("XDG_CURRENT_DESKTOP", "DESKTOP_SESSION")}
    e.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    return e


def xocview(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xocview", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


def xdg_mime(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(["xdg-mime", *args], capture_output=True, text=True, env=env, timeout=60)
    return out.stdout.strip()


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_install_makes_onnx_open_with_xocview(env: dict[str, str], tmp_path: Path) -> None:
    need("xdg-mime", "update-mime-database", "mimetype")
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07\x12\x07pytorch")  # the type comes from the name
    assert xdg_mime(env, "query", "filetype", str(model)) != "application/x-onnx"

    done = xocview(env, "--install-desktop")

    assert done.returncode == 0, done.stderr
    assert xdg_mime(env, "query", "filetype", str(model)) == "application/x-onnx"
    assert xdg_mime(env, "query", "default", "application/x-onnx") == APP_ID
    for name, mime in (
        ("model.pt2", "application/x-pytorch"),
        ("resnet.pth", "application/x-pytorch"),
        ("model-00001-of-00002.safetensors", "application/x-safetensors"),
        ("mobilenet.tflite", "application/x-tflite"),
        ("classifier.keras", "application/x-keras"),
        ("frozen.pb", "application/x-tensorflow"),
        ("graph.pbtxt", "application/x-tensorflow"),
        ("llama-3-8b.Q4_K_M.gguf", "application/x-gguf"),
    ):
        (tmp_path / name).write_bytes(b"PK\x03\x04")
        assert xdg_mime(env, "query", "filetype", str(tmp_path / name)) == mime
        assert xdg_mime(env, "query", "default", mime) == APP_ID


def test_json_is_offered_but_the_users_default_stays(env: dict[str, str], tmp_path: Path) -> None:
    need("xdg-mime")
    apps = tmp_path / "data" / "applications"
    apps.mkdir(parents=True)
    (apps / "editor.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Editor\nExec=/bin/cat %f\n"
        "MimeType=application/json;\n"
    )
    mimeapps = tmp_path / "config" / "mimeapps.list"
    mimeapps.parent.mkdir()
    mimeapps.write_text("[Default Applications]\napplication/json=editor.desktop;\n")

    assert xocview(env, "--install-desktop").returncode == 0

    assert xdg_mime(env, "query", "default", "application/json") == "editor.desktop"
    text = mimeapps.read_text()
    assert "[Added Associations]\napplication/json=xocview.desktop;" in text
    assert "application/json=editor.desktop;" in text
    assert "application/x-onnx=xocview.desktop;" in text


def test_desktop_files_pass_desktop_file_validate(tmp_path: Path) -> None:
    need("desktop-file-validate")
    dirs = XdgDirs(tmp_path / "data", tmp_path / "config")
    install(dirs, launcher=["/opt/x view/bin/xocview"])  # a space: the Exec value is quoted
    installed = dirs.data_home / "applications" / APP_ID
    assert 'Exec="/opt/x view/bin/xocview" %F' in installed.read_text().splitlines()
    for path in (DESKTOP_FILE, installed):
        check = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout


def test_uninstall_removes_exactly_what_was_installed(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "mimeapps.list").write_text(
        "# mine\n[Default Applications]\ntext/plain=editor.desktop;\n\n"
        "[Added Associations]\napplication/json=viewer.desktop;\n"
    )
    other_icon = tmp_path / "data" / "icons" / "hicolor" / "scalable" / "apps" / "other.svg"
    other_icon.parent.mkdir(parents=True)
    other_icon.write_text("<svg/>")
    before = snapshot(tmp_path)

    assert xocview(env, "--install-desktop").returncode == 0
    assert len(snapshot(tmp_path)) >= len(before) + 4
    gone = xocview(env, "--uninstall-desktop")

    assert gone.returncode == 0, gone.stderr
    assert snapshot(tmp_path) == before
    assert {p.name for p in (tmp_path / "data").iterdir()} == {"icons"}
    again = xocview(env, "--uninstall-desktop")
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_installing_twice_lists_xocview_once(tmp_path: Path) -> None:
    dirs = XdgDirs(tmp_path / "data", tmp_path / "config")
    install(dirs, launcher=["xocview"])
    install(dirs, launcher=["xocview"])
    text = dirs.mimeapps.read_text()
    assert text.count(APP_ID) == len(OWN_MIMES) + len(OFFERED_MIMES)  # once per type
    assert "Exec=xocview %F" in (dirs.data_home / "applications" / APP_ID).read_text()


def test_a_blocked_folder_is_one_line_without_traceback(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "data").write_text("a file where a folder should be")

    done = xocview(env, "--install-desktop")

    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xocview: error: "), done.stderr
    assert "cannot write" in lines[0] and "Traceback" not in done.stderr


def test_set_list_keeps_other_lines_and_orders_the_list() -> None:
    text = "# comment\n[Default Applications]\ntext/plain=a.desktop;\n\n[Other]\nk=v\n"

    first = set_list(text, "Default Applications", "image/png", lambda apps: [*apps, "x.desktop"])
    second = set_list(
        first, "Default Applications", "text/plain", lambda apps: ["x.desktop", *apps]
    )

    assert second == (
        "# comment\n[Default Applications]\ntext/plain=x.desktop;a.desktop;\n"
        "image/png=x.desktop;\n\n[Other]\nk=v\n"
    )
    removed = set_list(first, "Default Applications", "image/png", lambda apps: [])
    assert removed == text
    new = set_list("", "Added Associations", "application/json", lambda apps: ["x.desktop"])
    assert new == "[Added Associations]\napplication/json=x.desktop;\n"
    assert set_list(new, "Added Associations", "application/json", lambda apps: []) == ""


def test_xdg_dirs_ignore_relative_values(tmp_path: Path) -> None:
    dirs = XdgDirs.from_env({"HOME": str(tmp_path), "XDG_DATA_HOME": "rel", "XDG_CONFIG_HOME": ""})
    assert dirs == XdgDirs(tmp_path / ".local" / "share", tmp_path / ".config")
