"""Nothing a file holds reaches the terminal raw (issue 28, item 5): names, op types, doc strings
and metadata with ESC sequences (clear screen, window title), 8-bit CSI, CR/LF and bidi
overrides are printed escaped by every command, on stdout and stderr, as text and as JSON."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.conftest import REPO
from xocview.cli import main
from xocview.errors import stream_safe, terminal_safe

# Clear screen, set the window title, an 8-bit CSI, a forged line, a right-to-left override.
EVIL = "\x1b[2J\x1b]0;pwned\x07\x9b31m\r\nFAKE LINE\u202e"
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def assert_terminal_safe(data: bytes, what: str = "") -> str:
    """``data`` as printed: no ESC byte, no C0 but LF and tab, no C1, no bidi control, no line
    forged by a file; returns the text."""
    assert b"\x1b" not in data, (what, data[:2000])
    text = data.decode("utf-8")
    raw = _RAW.search(text)
    assert raw is None, (what, raw, text[:2000])
    forged = [ln for ln in text.split("\n") if ln.startswith("FAKE LINE")]
    assert not forged, (what, text[:2000])
    return text


def _v(name: str) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 2])


def runnable_model(path: Path) -> Path:
    """Relu then Add on tensors, nodes, graph, doc strings and metadata named with EVIL."""
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w" + EVIL)
    nodes = [
        helper.make_node("Relu", ["x" + EVIL], ["t" + EVIL], "relu" + EVIL, doc_string=EVIL),
        helper.make_node("Add", ["t" + EVIL, "w" + EVIL], ["y" + EVIL], "add" + EVIL),
    ]
    graph = helper.make_graph(
        nodes, "graph" + EVIL, [_v("x" + EVIL)], [_v("y" + EVIL)], [w], doc_string=EVIL
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], doc_string=EVIL, producer_name=EVIL
    )
    helper.set_model_props(model, {"key" + EVIL: "value" + EVIL})
    onnx.save(model, path)
    return path


def custom_op_model(path: Path, node_name: str = "evil" + EVIL) -> Path:
    """One node of a custom domain whose op type is EVIL: no kernel runs it."""
    node = helper.make_node("Op" + EVIL, ["x" + EVIL], ["y" + EVIL], node_name, domain="evil.ai")
    graph = helper.make_graph([node], "custom" + EVIL, [_v("x" + EVIL)], [_v("y" + EVIL)])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("evil.ai", 1)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    return path


def xoc_model(path: Path, broken: bool = False, first_kind: str = "input") -> Path:
    """XOC JSON with EVIL in ids, op types and metadata (``broken``: its two nodes share an id;
    ``first_kind``: the kind of its first tensor, which none but the four may have)."""
    kinds = (first_kind, "activation", "output")
    tensors = [
        {"id": f"t{i}{EVIL}", "name": kind, "shape": [2, 2], "dtype": "float32"}
        for i, kind in enumerate(kinds)
    ]
    nodes = [
        {
            "id": "n0" + EVIL,
            "name": "Relu",
            "inputs": [0],
            "outputs": [1],
            "attributes": {},
            "metadata": {EVIL: EVIL},
        },
        {
            "id": ("n0" if broken else "n1") + EVIL,
            "name": "Op" + EVIL,
            "inputs": [1],
            "outputs": [2],
            "attributes": {},
        },
    ]
    data = {
        "id": "g" + EVIL,
        "name": "graph" + EVIL,
        "tensors": tensors,
        "nodes": nodes,
        "inputs": [0],
        "outputs": [2],
        "metadata": {"doc" + EVIL: EVIL},
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    return {
        "run": runnable_model(d / "run.onnx"),
        "custom": custom_op_model(d / "custom.onnx"),
        "xoc": xoc_model(d / "hostile.json"),
        "xoc_broken": xoc_model(d / "broken.json", broken=True),
        "xoc_unreadable": xoc_model(d / "unreadable.json", first_kind=EVIL),
    }


def cli(capsysbinary: pytest.CaptureFixture[bytes], *args: str | Path) -> tuple[int, str, str]:
    """``xocview ARGS`` in this process; stdout and stderr checked safe, returned as text."""
    code = main([str(a) for a in args])
    out, err = capsysbinary.readouterr()
    what = " ".join(map(str, args))
    return code, assert_terminal_safe(out, what), assert_terminal_safe(err, what)


def test_the_check_itself_catches_raw_text() -> None:
    for raw in (EVIL, "\x9b31m", "a\u202eb", "x\r\ny", "ok\nFAKE LINE here\n"):
        with pytest.raises(AssertionError):
            assert_terminal_safe(raw.encode())
    assert assert_terminal_safe("名字\tok\n".encode()) == "名字\tok\n"


def test_escaping_keeps_other_text_and_round_trips_through_json() -> None:
    assert terminal_safe("名字 café") == "名字 café"
    assert terminal_safe(EVIL) == r"\x1b[2J\x1b]0;pwned\x07\x9b31m\r\nFAKE LINE\u202e"
    assert stream_safe("a\tb\nc") == "a\tb\nc"
    shown = stream_safe(json.dumps({"k": "\x9b\u202e\u2066名"}, ensure_ascii=False))
    assert json.loads(shown) == {"k": "\x9b\u202e\u2066名"}


def test_info_and_check_print_names_escaped(
    files: dict[str, Path], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    for key in ("run", "custom", "xoc"):
        code, out, err = cli(capsysbinary, "info", files[key])
        assert code == 0, err
        assert r"\x1b[2J\x1b]0;pwned\x07\x9b31m\r\nFAKE LINE\u202e" in out
    code, out, _ = cli(capsysbinary, "check", files["xoc"])
    assert code == 0 and r"n1\x1b[2J" not in out
    code, out, err = cli(capsysbinary, "check", files["xoc_broken"])
    assert code == 1 and r"\x1b[2J" in out + err
    code, _, err = cli(capsysbinary, "info", files["xoc_unreadable"])
    assert code == 1 and r"\x1b[2J" in err and err.count("\n") == 1, err


def test_run_prints_outputs_and_nodes_escaped(
    files: dict[str, Path], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, err = cli(capsysbinary, "run", files["run"], "--repeat", "2", "--warmup", "0")
    assert code == 0, err
    assert r"y\x1b[2J" in out and r"relu\x1b[2J" in out
    code, out, err = cli(capsysbinary, "run", files["custom"])
    assert code == 1 and err.startswith(f"xocview: error: {files['custom']}: "), err
    assert r"Op\x1b[2J" in err and err.count("\n") == 1


def test_run_error_names_the_file_and_cuts_a_300_character_id(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    model = custom_op_model(tmp_path / "long.onnx", node_name="n" * 300)
    code, _, err = cli(capsysbinary, "run", model)
    assert code == 1
    assert err.startswith(f"xocview: error: {model}: "), err
    assert "n" * 80 + "... (300 characters)" in err and "n" * 81 not in err


def test_diff_text_and_json_are_escaped_and_json_keeps_the_names(
    files: dict[str, Path], capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, out, err = cli(capsysbinary, "diff", files["run"], files["custom"])
    assert code == 1, err
    assert r"relu\x1b[2J" in out
    code, out, err = cli(capsysbinary, "diff", "--json", files["run"], files["custom"])
    assert code == 1, err
    report = json.loads(out)  # escaped as \uXXXX, the JSON reads back the names themselves
    assert report["old"]["name"] == "graph" + EVIL
    removed = {f["old"] for f in report["findings"] if f["kind"] == "node removed"}
    assert removed == {"relu" + EVIL, "add" + EVIL}


def test_import_times_lists_matched_and_unmatched_names_escaped(
    files: dict[str, Path], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    data = tmp_path / "node_data.json"
    results = {"relu" + EVIL: {"value": 1}, "ghost" + EVIL: {"value": 2}}
    data.write_text(json.dumps({"results": results}), encoding="utf-8")
    out_file = tmp_path / "timed.json"
    code, out, err = cli(capsysbinary, "import-times", files["run"], data, "-o", out_file)
    assert code == 0, err
    assert "1 of 2" in out and r"ghost\x1b[2J" in out


def test_convert_edit_and_their_errors_are_escaped(
    files: dict[str, Path], tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    code, _, err = cli(capsysbinary, "convert", files["run"], tmp_path / "c.json")
    assert code == 0, err
    code, _, err = cli(capsysbinary, "convert", files["xoc"], tmp_path / "c.onnx")
    assert code in (0, 1), err
    code, _, err = cli(
        capsysbinary, "edit", files["run"], "-o", tmp_path / "e.json", "--delete", EVIL
    )
    assert code == 1 and r"\x1b[2J" in err and err.count("\n") == 1
    code, _, err = cli(
        capsysbinary,
        "edit",
        files["run"],
        "-o",
        tmp_path / "e.json",
        "--rename",
        f"relu{EVIL}={EVIL}",
    )
    assert code == 0, err
    code, out, _ = cli(capsysbinary, "info", tmp_path / "e.json")
    assert code == 0 and r"FAKE LINE\u202e" in out
    missing = tmp_path / f"missing{EVIL}.onnx"
    code, _, err = cli(capsysbinary, "info", missing)
    assert code == 1 and err.count("\n") == 1


def test_a_real_process_writes_no_raw_control_byte(files: dict[str, Path]) -> None:
    """The streams of a process of its own: what the user's terminal gets, byte for byte."""
    for args in (["info", files["custom"]], ["diff", "--json", files["run"], files["custom"]]):
        r = subprocess.run(
            [sys.executable, "-m", "xocview", *map(str, args)],
            capture_output=True,
            cwd=REPO,
            timeout=300,
            check=False,
        )
        assert r.returncode in (0, 1), r.stderr
        assert_terminal_safe(r.stdout, str(args))
        assert_terminal_safe(r.stderr, str(args))
        assert r"\u001b[2J" in r.stdout.decode() or r"\x1b[2J" in r.stdout.decode()
