"""Atomic saves, and the temporary files a killed save leaves behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xocview.formats.atomic import remove_stale_temporaries, write_atomic, write_text_atomic

ROOT = Path(__file__).resolve().parents[2]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_save_removes_the_temporary_file_of_a_writer_that_is_gone(tmp_path: Path) -> None:
    target = tmp_path / "model.json"
    stale = tmp_path / f".model.json.xoc{_dead_pid()}-abc123.tmp"
    stale.write_bytes(b"")
    write_text_atomic(target, "{}")
    assert target.read_text() == "{}"
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_a_save_in_progress_elsewhere_and_other_files_are_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "model.json"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        running = tmp_path / f".model.json.xoc{sleeper.pid}-zz.tmp"
        running.write_bytes(b"partial")
        other = tmp_path / ".other.json.xoc1-zz.tmp"  # another file's temporary
        mine_not = tmp_path / ".model.json.backup.tmp"  # not named as ours
        other.write_bytes(b"")
        mine_not.write_bytes(b"")
        write_text_atomic(target, "{}")
        assert running.exists() and other.exists() and mine_not.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    assert remove_stale_temporaries(target) == [running]


def test_a_day_old_temporary_file_is_stale_whoever_wrote_it(tmp_path: Path) -> None:
    target = tmp_path / "m.json"
    old = tmp_path / f".m.json.xoc{os.getpid()}-q.tmp"
    old.write_bytes(b"")
    day_ago = time.time() - 25 * 3600
    os.utime(old, (day_ago, day_ago))
    assert remove_stale_temporaries(target) == [old]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_during_a_save_then_saving_again_leaves_one_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "g.json"
    target.write_text('{"old": true}')
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from xocview.formats.atomic import write_atomic\n"
        "def slow(f):\n"
        "    print('writing', flush=True)\n"
        "    time.sleep(60)\n"
        f"write_atomic(Path({str(target)!r}), slow)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(leftovers) == 1 and leftovers[0].stat().st_size == 0
    assert target.read_text() == '{"old": true}'  # the killed save changed nothing
    write_text_atomic(target, '{"new": true}')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json"]
    assert target.read_text() == '{"new": true}'


def test_before_replace_sees_the_whole_temporary_file_and_the_old_target(tmp_path: Path) -> None:
    target = tmp_path / "model.json"
    target.write_text("old")
    seen: list[tuple[str, list[bytes]]] = []

    def look() -> None:
        temps = [p.read_bytes() for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        seen.append((target.read_text(), temps))

    write_atomic(target, lambda f: f.write(b"new"), look)
    assert seen == [("old", [b"new"])]
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


@pytest.mark.skipif(sys.platform == "win32", reason="the lock is flock, POSIX only")
def test_saves_in_one_folder_take_turns(tmp_path: Path) -> None:
    """A second process waits for the folder's lock while the first holds it."""
    holder = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from xocview.formats.atomic import folder_lock\n"
        "with folder_lock(Path(sys.argv[1])):\n"
        "    print('in', time.monotonic(), flush=True)\n"
        "    time.sleep(float(sys.argv[2]))\n"
        "    print('out', time.monotonic(), flush=True)\n"
    )
    first = subprocess.Popen(
        [sys.executable, "-c", holder, str(tmp_path), "1.5"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert first.stdout is not None
    assert first.stdout.readline().startswith("in")
    second = subprocess.run(
        [sys.executable, "-c", holder, str(tmp_path), "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    out_first = float(first.stdout.readline().split()[1])
    first.wait(timeout=60)
    in_second = float(second.stdout.split()[1])
    assert in_second >= out_first
    assert os.listdir(tmp_path) == []  # no lock file left behind
