"""The seed files of the fuzz: sample graphs, the shared corpus, ONNX light models, a tiny model."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["FORMATS", "REPO", "SHARED_CORPUS", "Seed", "all_seeds", "suite_seeds"]

REPO = Path(__file__).resolve().parents[2]
SHARED_CORPUS = REPO.parent / "shared" / "corpus"
FORMATS = (
    "xoc",
    "nnvm",
    "lightnet",
    "onnx",
    "safetensors",
    "pytorch",
    "tflite",
    "keras",
    "tensorflow",
)
# Binary formats' seeds: the small files the tests made with the real tools (tests/data/).
_BINARY = {
    "safetensors": ("safetensors", (".safetensors",)),
    "pytorch": ("pytorch", (".pt2", ".pt", ".pth", ".bin", ".ckpt", ".jit")),
    "tflite": ("tflite", (".tflite",)),
    "keras": ("keras", (".keras", ".h5")),
    "tensorflow": ("tensorflow", (".pb", ".pbtxt")),
}
MAX_SEED_BYTES = 3_000_000  # larger files are left out of the fuzz
# The in-suite slice takes small seeds only, and not these, whose runs take seconds unharmed.
SUITE_MAX_BYTES = 16_000
SUITE_SLOW = frozenset({"light_vgg19.onnx", "lightnet_trt_test_null_values.json"})


@dataclass(frozen=True)
class Seed:
    """One seed file: its format, where it came from, its bytes (and side files)."""

    name: str
    fmt: str
    path: Path | None
    raw: bytes = field(repr=False, compare=False, default=b"")
    side_files: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)

    @property
    def data(self) -> bytes:
        return self.raw if self.path is None else self.path.read_bytes()

    @property
    def suffix(self) -> str:
        if self.fmt in _BINARY and self.path is not None:
            return self.path.suffix
        return ".onnx" if self.fmt == "onnx" else ".json"


def _json_format(path: Path) -> str | None:
    """Which of our JSON formats a seed is, told by its folder or, in sample_graphs, its content."""
    parent = path.parent.name
    if parent in ("nnvm", "lightnet", "xoc"):
        return parent
    try:
        value = json.loads(path.read_bytes())
    except ValueError:
        return "xoc"  # sample_graphs/broken: damaged XOC JSON
    if isinstance(value, dict) and "arg_nodes" in value:
        return "nnvm"
    if isinstance(value, dict) and ("tensors" in value or "graph" in value):
        return "xoc"
    return "lightnet" if isinstance(value, dict) and "ops" in value else None


def onnx_light_dir() -> Path | None:
    try:
        import onnx
    except ImportError:
        return None
    path = Path(os.path.dirname(onnx.__file__)) / "backend" / "test" / "data" / "light"
    return path if path.is_dir() else None


@functools.cache
def all_seeds() -> tuple[Seed, ...]:
    """Every seed, sorted, so that a fixed fuzz seed picks the same files on every machine."""
    from tests.fuzz.onnx_mutators import tiny_model

    seeds: list[Seed] = []
    files = [p for p in (REPO / "sample_graphs").rglob("*.json") if p.name != "manifest.json"]
    files += sorted((REPO / "sample_graphs").rglob("*.onnx"))
    if SHARED_CORPUS.is_dir():
        files += sorted(SHARED_CORPUS.rglob("*.json")) + sorted(SHARED_CORPUS.rglob("*.onnx"))
    light = onnx_light_dir()
    if light is not None:
        files += sorted(light.glob("*.onnx"))
    for path in sorted(set(files)):
        if path.stat().st_size > MAX_SEED_BYTES:
            continue
        fmt = "onnx" if path.suffix == ".onnx" else _json_format(path)
        if fmt is not None:
            seeds.append(Seed(path.name, fmt, path))
    for fmt, (folder, suffixes) in _BINARY.items():
        for path in sorted((REPO / "tests" / "data" / folder).rglob("*")):
            if path.suffix in suffixes and path.stat().st_size <= MAX_SEED_BYTES:
                seeds.append(Seed(path.name, fmt, path))
    data, side = tiny_model()
    seeds.append(Seed("tiny_external.onnx", "onnx", None, data, side))
    return tuple(sorted(seeds, key=lambda s: (s.fmt, s.name)))


def suite_seeds(fmt: str | None = None) -> tuple[Seed, ...]:
    """The small, fast seeds of the in-suite slice (of one format, or all)."""
    return tuple(
        s
        for s in all_seeds()
        if (fmt is None or s.fmt == fmt)
        and s.name not in SUITE_SLOW
        and (s.path is None or s.path.stat().st_size <= _suite_limit(s.fmt))
    )


def _suite_limit(fmt: str) -> int:
    """The largest seed of the slice: binary test files are the size their tools write."""
    return 200_000 if fmt in _BINARY else SUITE_MAX_BYTES
