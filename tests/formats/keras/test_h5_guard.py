"""A damaged legacy ``.h5`` whose ``model_config`` sends libhdf5 into an endless loop is
refused after the time limit instead of hanging the reader (found by the fuzzer: bytes
11108:13415 of pair_tf2.h5 repeated at 4690 corrupt the heap the config string lives in)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from xocview.errors import FormatError
from xocview.formats.keras import h5_guard, keras_file
from xocview.formats.source import Source

DATA = Path(__file__).resolve().parents[2] / "data" / "keras"


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="the guard needs fork")
def test_a_looping_attribute_read_is_stopped_and_the_file_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = (DATA / "pair_tf2.h5").read_bytes()
    damaged = tmp_path / "pair.h5"
    damaged.write_bytes(data[:4690] + data[11108:13415] + data[4690:])
    monkeypatch.setattr(h5_guard, "LIMIT_SECONDS", 1.0)
    start = time.monotonic()
    with pytest.raises(FormatError, match=r"pair\.h5: model_config: reading it did not finish"):
        keras_file.load(Source(damaged))
    assert time.monotonic() - start < 5


def test_the_guarded_read_gives_what_h5py_gives(tmp_path: Path) -> None:
    import h5py

    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        f.attrs["text"] = "Δ config " * 20000
    assert h5_guard.read_attr(path, "text", "a.h5") == "Δ config " * 20000
    assert h5_guard.read_attr(path, "missing", "a.h5") is None
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    with pytest.raises(FormatError, match=r"a\.h5: text: cannot be read"):
        h5_guard.read_attr(path, "text", "a.h5")
