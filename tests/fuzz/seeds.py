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
    "gguf",
)
# Binary formats' seeds: the small files the tests made with the real tools (tests/data/).
_BINARY = {
    "safetensors": ("safetensors", (".safetensors",)),
    "pytorch": ("pytorch", (".pt2", ".pt", ".pth", ".bin", ".ckpt", ".jit")),
    "tflite": ("tflite", (".tflite",)),
    "keras": ("keras", (".keras", ".h5")),
    "tensorflow": ("tensorflow", (".pb", ".pbtxt")),
    "gguf": ("gguf", (".gguf",)),
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
        if self.fmt in _BINARY:
            return Path(self.name).suffix if self.path is None else self.path.suffix
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
    seeds.append(Seed("tiny_q8_0.gguf", "gguf", None, tiny_gguf()))
    return tuple(sorted(seeds, key=lambda s: (s.fmt, s.name)))


@functools.cache
def tiny_gguf() -> bytes:
    """A one-block Llama GGUF of 8 KB, its matrices Q8_0 (drawn as DequantizeLinear): the
    small seed of the in-suite slice (the test data's file is 112 KB)."""
    import tempfile

    import gguf
    import numpy as np

    rng = np.random.default_rng(0)
    q8 = gguf.GGMLQuantizationType.Q8_0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tiny.gguf"
        w = gguf.GGUFWriter(path, "llama")
        for key in ("block_count", "embedding_length", "feed_forward_length"):
            w.add_uint32(f"llama.{key}", {"block_count": 1}.get(key, 32))
        w.add_uint32("llama.attention.head_count", 2)
        w.add_layer_norm_rms_eps(1e-5)
        names = ["token_embd", "output", "output_norm", "blk.0.attn_norm", "blk.0.ffn_norm"]
        names += [f"blk.0.attn_{x}" for x in ("q", "k", "v", "output")]
        names += [f"blk.0.ffn_{x}" for x in ("gate", "up", "down")]
        for name in names:
            rows = 16 if name in ("token_embd", "output") else 32
            if name.endswith("norm"):
                w.add_tensor(f"{name}.weight", np.ones(32, np.float32))
                continue
            values = rng.standard_normal((rows, 32)).astype(np.float32)
            raw = gguf.quants.quantize(values, q8)
            w.add_tensor(f"{name}.weight", raw, raw_shape=raw.shape, raw_dtype=q8)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return path.read_bytes()


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
