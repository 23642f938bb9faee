"""The memory budget: where available memory is read from, sizes as the user writes them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from xocview.executor import budget
from xocview.executor.budget import format_size, parse_size, resolve_budget


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("2G", 2 * 2**30),
        ("512M", 512 * 2**20),
        ("1.5g", 3 * 2**29),
        ("64k", 64 * 1024),
        ("1000", 1000),
        ("2GB", 2 * 2**30),
        ("2GiB", 2 * 2**30),
        ("0", 0),
        ("none", 0),
        ("None", 0),
    ],
)
def test_sizes_read_as_the_user_writes_them(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "2x", "-1G", "G", "1e9", "two"])
def test_a_size_that_is_not_one_is_refused_with_examples(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a size; expected e\.g\. 2G, 512M"):
        parse_size(text)


def test_sizes_print_in_the_unit_that_suits_them() -> None:
    assert format_size(3.7 * 2**30) == "3.7 GB"
    assert format_size(512 * 2**20) == "512.0 MB"
    assert format_size(100) == "100 B"


def test_meminfo_gives_the_available_memory(tmp_path: Path) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:  8000 kB\nMemFree: 100 kB\nMemAvailable:    2048 kB\n")
    assert budget._meminfo_available(info) == 2048 * 1024
    assert budget._meminfo_available(tmp_path / "absent") is None
    info.write_text("MemTotal: 8000 kB\n")  # old kernels have no MemAvailable
    assert budget._meminfo_available(info) is None


def test_a_cgroup_limit_caps_the_available_memory(tmp_path: Path) -> None:
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("73741824\n")
    assert budget._cgroup_available(tmp_path) == 1_000_000_000
    (tmp_path / "memory.max").write_text("max\n")
    assert budget._cgroup_available(tmp_path) is None
    assert budget._cgroup_available(tmp_path / "absent") is None


def test_the_default_budget_is_half_the_smallest_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "_meminfo_available", lambda: 8 * 2**30)
    monkeypatch.setattr(budget, "_cgroup_available", lambda: 2 * 2**30)
    monkeypatch.setattr(budget, "_rlimit_available", lambda: None)
    assert budget.available_memory() == 2 * 2**30
    assert resolve_budget(None) == 2**30


def test_no_system_information_falls_back_to_a_guess(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("_meminfo_available", "_sysconf_available", "_cgroup_available"):
        monkeypatch.setattr(budget, name, lambda: None)
    monkeypatch.setattr(budget, "_rlimit_available", lambda: None)
    assert budget.available_memory() == budget.FALLBACK_AVAILABLE


def test_zero_means_no_limit_and_a_number_is_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_budget(0) is None
    assert resolve_budget(12345) == 12345
    # the machine's free memory moves between two reads: hold it still
    monkeypatch.setattr(budget, "available_memory", lambda: 8 << 30)
    assert (
        resolve_budget(None) == budget.default_budget() == int((8 << 30) * budget.DEFAULT_FRACTION)
    )


def test_sizes_of_damaged_shapes_still_print() -> None:
    assert format_size(2**70) == "1.18e+21 B"
    assert format_size(10**400) == "more than 1e308 B"


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS, /proc")


@linux_only
def test_a_budgeted_run_caps_the_address_space_and_restores_it() -> None:
    import resource

    before = resource.getrlimit(resource.RLIMIT_AS)
    with budget.address_space_limit(64 * 2**20):
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        assert soft != resource.RLIM_INFINITY
        with pytest.raises(MemoryError):
            np.empty(soft, dtype=np.uint8)  # more than the whole cap: refused, not overcommitted
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    with budget.address_space_limit(None):
        assert resource.getrlimit(resource.RLIMIT_AS) == before


@linux_only
def test_a_kernel_temporary_no_shape_announced_stops_at_its_node(tmp_path: Path) -> None:
    """Pads of 10^6 on a 14x14 input: the declared shapes are small, the padded input 3 GB."""
    import onnx
    from onnx import TensorProto, helper

    from xocview.errors import RunError
    from xocview.executor import run
    from xocview.formats import load

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 14, 14])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 14, 14])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 64, 1, 1])
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="wide", pads=[0, 1_000_000, 0, 0])
    model = helper.make_model(
        helper.make_graph([conv], "g", [x, w], [y]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    path = tmp_path / "wide.onnx"
    onnx.save(model, str(path))
    with pytest.raises(RunError, match=r"node 'wide' \(Conv\): not enough memory"):
        run(load(path), max_memory=256 * 2**20)


def test_an_unknowable_size_still_prints() -> None:
    assert format_size(float("nan")) == "an unknown size"
