"""Opening a file: only regular files are read, and JSON that Python cannot hold is located."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from xocview.cli import main
from xocview.errors import FormatError
from xocview.formats import registry
from xocview.formats.source import Source, read_regular_file

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev are POSIX")


@posix_only
def test_a_fifo_is_refused_before_it_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "graph.json"
    os.mkfifo(fifo)  # nobody writes: a read would block forever
    with pytest.raises(FormatError, match=r"graph\.json: is a named pipe \(FIFO\), not a file"):
        registry.load(fifo)


@posix_only
@pytest.mark.parametrize("command", ["info", "check", "render"])
def test_the_cli_refuses_a_fifo_at_once(tmp_path: Path, command: str) -> None:
    """In a process of its own: render starts Qt, which a test process must not share."""
    fifo = tmp_path / "g.onnx"
    os.mkfifo(fifo)
    argv = [command, str(fifo)] + ([str(tmp_path / "o.png")] if command == "render" else [])
    res = subprocess.run(
        [sys.executable, "-m", "xocview", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert res.returncode == 1
    assert res.stderr.strip() == (
        f"xocview: error: {fifo}: is a named pipe (FIFO), not a file; expected a regular file"
    )


@posix_only
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_is_refused_without_reading(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "/dev/zero"]) == 1
    assert "/dev/zero: is a character device, not a file" in capsys.readouterr().err


def test_a_folder_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="is a folder, not a file"):
        _ = Source(tmp_path).data


def test_a_file_over_the_limit_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.onnx"
    big.write_bytes(b"\x08" * 100)
    with pytest.raises(FormatError, match=r"big\.onnx: is 100 bytes, more than xocview reads"):
        read_regular_file(big, limit=99)
    assert read_regular_file(big, limit=100) == b"\x08" * 100


def test_json_nested_too_deeply_is_one_located_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"id": "g", "name": "g", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(FormatError) as info:
        registry.load(deep)
    assert str(info.value) == (
        f"{deep}: metadata[0][0][0][0]…: nested 100,001 deep (line 1 column 237); expected "
        "arrays and objects nested at most 200 deep"
    )


def test_an_integer_past_pythons_limit_is_located(tmp_path: Path) -> None:
    f = tmp_path / "big_int.json"
    f.write_text('{"id": "g",\n "name": "g", "tensors": [{"shape": [' + "9" * 5000 + "]}]}")
    with pytest.raises(FormatError) as info:
        registry.load(f)
    assert str(info.value) == (
        f"{f}: line 2 column 38: a number with more than 4,300 digits; "
        "expected numbers of ordinary size"
    )


def test_a_dimension_past_int64_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "dims.json"
    f.write_text(
        '{"id": "g", "name": "g", "tensors": [{"id": "x", "name": "input", "shape": [1, '
        + str(2**70)
        + '], "dtype": "float32"}], "nodes": [], "inputs": [0], "outputs": [], "metadata": {}}'
    )
    with pytest.raises(FormatError, match=r"tensors\[0\]\.shape\[1\]: dimension 1180591620"):
        registry.load(f)


def test_check_reports_a_bad_dtype_once_at_its_place_in_the_file(tmp_path: Path) -> None:
    graph = (
        '{"id": "g", "name": "g", "tensors": [{"id": "x", "name": "input", "shape": [1], '
        '"dtype": "float99"}, {"id": "y", "name": "output", "shape": [1], "dtype": "float32"}],'
        ' "nodes": [{"id": "n", "name": "Relu", "inputs": [0], "outputs": [1], '
        '"attributes": {}}], "inputs": [0], "outputs": [1], "metadata": {}}'
    )
    for name, text, prefix in (
        ("plain.json", graph, ""),
        ("wrapped.json", '{"graph": ' + graph + "}", "graph."),
    ):
        (tmp_path / name).write_text(text)
        _, found = registry.check(tmp_path / name)
        assert [(f.severity, f.place) for f in found] == [("error", f"{prefix}tensors[0].dtype")]
        assert "unknown dtype 'float99'" in found[0].message


def test_a_megabyte_name_gives_a_short_message(tmp_path: Path) -> None:
    name = "n" * 1_000_000
    f = tmp_path / "long.json"
    f.write_text(
        '{"id": "g", "name": "g", "tensors": [], "nodes": [{"id": "' + name + '", "name": '
        '"Relu", "inputs": [5], "outputs": [], "attributes": {}}], "inputs": [], '
        '"outputs": [], "metadata": {}}'
    )
    with pytest.raises(FormatError) as info:
        registry.load(f)
    assert len(str(info.value)) < 400
    _, found = registry.check(f)
    assert found and all(len(str(x)) < 400 for x in found)


def test_a_lone_surrogate_is_refused_at_its_place(tmp_path: Path) -> None:
    f = tmp_path / "s.json"
    f.write_text('{"id": "g", "name": "g", "tensors": [], "nodes": [{"id": "a\\udfffb"}]}')
    with pytest.raises(FormatError) as info:
        registry.load(f)
    assert str(info.value) == (
        f"{f}: nodes[0].id: a lone surrogate \\udfff in a string; "
        "expected text of valid Unicode (surrogates only in pairs)"
    )


def test_a_surrogate_pair_is_one_character(tmp_path: Path) -> None:
    f = tmp_path / "pair.json"
    f.write_text(
        '{"id": "g", "name": "g\\ud83d\\ude00", "tensors": [], "nodes": [], "inputs": [], '
        '"outputs": [], "metadata": {}}'
    )
    assert registry.load(f).name == "g\U0001f600"


def test_a_newline_in_a_quoted_value_keeps_the_message_one_line(tmp_path: Path) -> None:
    f = tmp_path / "nl.json"
    f.write_text(
        '{"id": "g", "name": "g", "tensors": [{"id": "t", "name": "a\\nb", "shape": [1], '
        '"dtype": "float32"}], "nodes": [], "inputs": [], "outputs": [], "metadata": {}}'
    )
    with pytest.raises(FormatError) as info:
        registry.load(f)
    text = str(info.value)
    assert "\n" not in text and "'a\\nb'" in text
    _, found = registry.check(f)
    assert found and all("\n" not in str(x) for x in found)
