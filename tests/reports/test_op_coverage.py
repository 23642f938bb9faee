"""The coverage report runs and its counts agree with the op tables it reads."""

from __future__ import annotations

import pytest

from tests.reports import op_coverage
from xocview.formats.tensorflow.ops import TF_ONNX
from xocview.formats.tflite.ops import TFLITE_ONNX


def test_the_report_lists_every_builtin_and_counts_what_the_tables_map(
    capsys: pytest.CaptureFixture[str],
) -> None:
    table = op_coverage.rows()
    assert [r.builtin for r in table] == op_coverage.builtins()
    assert "CONV_2D" in [r.builtin for r in table] and len(table) > 150
    for r in table:
        assert r.tflite == (r.builtin in TFLITE_ONNX or r.builtin in op_coverage.TFLITE_CONTROL)
        assert all(m == (op in TF_ONNX or op in op_coverage.TF_CONTROL) for op, m in r.tf)
    monkey_args = ["op_coverage.py", "--markdown"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.argv", monkey_args)
        assert op_coverage.main() == 0
    out = capsys.readouterr().out
    runs, of = op_coverage.counts(table)["TFLite"]
    assert f"TFLite: {runs} of {of} builtins run" in out
    assert out.startswith("| builtin | TFLite |")
