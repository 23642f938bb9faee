"""ONNX exports of Hugging Face models (BERT, GPT-2, T5, Whisper, ViT) made on the spot.

Real exporters name nodes by module path, share weights through Identity nodes and emit
shape arithmetic that synthetic graphs lack; the first-view benchmark needs that. Models are
built from configs with small dimensions and seeded random weights (nothing is downloaded),
each exported by TorchScript (``dynamo=False``, opset 17) and by the dynamo exporter (opset 18).
Two sizes: ``tiny`` (width 64, 8 tokens: what the first view needs, and where an executor's
cost per node shows) and ``base`` (width 256, 128 tokens, 224-pixel images, 15 s of audio
frames: where the kernels' own speed shows, as in a user's profile).
An exporter that fails on a model is recorded with its reason, not raised.

Needs the ``bench`` extra, which ``make`` never installs: ``pip install -e .[bench]`` (it pins
the CPU torch this was measured with; install torch from a CPU wheel first if pip would pick
a CUDA build).

    python tests/perf/torch_exports.py OUT_DIR [--layers 4 12] [--models bert gpt2 t5 whisper vit]
        [--size tiny|base]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

EXPORTERS = ("ts", "dynamo")
OPSETS = {"ts": 17, "dynamo": 18}
SEED = 0


@dataclass(frozen=True)
class Dims:
    """The dimensions every family is built with."""

    width: int  # hidden size (d_model)
    ffn: int  # feed-forward width
    heads: int
    seq: int  # tokens per input sequence
    vocab: int
    audio: int  # Whisper's encoder positions (half its mel frames)
    image: int  # ViT's image side, in pixels
    patch: int


SIZES = {
    "tiny": Dims(64, 128, 4, 8, 256, 32, 32, 8),
    "base": Dims(256, 1024, 4, 128, 1024, 750, 224, 16),
}


@dataclass
class Export:
    """One model exported by one exporter: the file, or why there is none."""

    name: str  # e.g. bert_4l_ts
    family: str
    layers: int
    exporter: str
    path: Path | None
    seconds: float
    error: str | None = None
    note: str | None = None  # e.g. which fallback made the file
    size: str = "tiny"  # a key of SIZES


@dataclass
class Facts:
    """What an export holds that matters to the first view."""

    nodes: int
    initializers: int
    weight_identities: int  # Identity nodes whose input is an initializer (shared weights)


def _bert(layers: int, d: Dims) -> tuple[Any, dict[str, Any]]:
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=d.vocab,
        hidden_size=d.width,
        num_hidden_layers=layers,
        num_attention_heads=d.heads,
        intermediate_size=d.ffn,
        max_position_embeddings=max(64, d.seq),
    )
    ids = torch.randint(0, d.vocab, (1, d.seq))
    return BertModel(config), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _gpt2(layers: int, d: Dims) -> tuple[Any, dict[str, Any]]:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        vocab_size=d.vocab,
        n_positions=max(64, d.seq),
        n_embd=d.width,
        n_layer=layers,
        n_head=d.heads,
        n_inner=d.ffn if d.ffn != 4 * d.width else None,
        bos_token_id=1,
        eos_token_id=2,
    )
    ids = torch.randint(0, d.vocab, (1, d.seq))
    return GPT2LMHeadModel(config), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}


def _t5(layers: int, d: Dims) -> tuple[Any, dict[str, Any]]:
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=d.vocab,
        d_model=d.width,
        d_kv=d.width // d.heads,
        d_ff=d.ffn,
        num_layers=layers,
        num_decoder_layers=layers,
        num_heads=d.heads,
        relative_attention_num_buckets=8 if d.seq <= 8 else 32,
        decoder_start_token_id=0,
    )
    ids = torch.randint(0, d.vocab, (1, d.seq))
    dec = torch.randint(0, d.vocab, (1, d.seq))
    return T5ForConditionalGeneration(config), {"input_ids": ids, "decoder_input_ids": dec}


def _whisper(layers: int, d: Dims) -> tuple[Any, dict[str, Any]]:
    import torch
    from transformers import WhisperConfig, WhisperModel

    config = WhisperConfig(
        vocab_size=d.vocab,
        num_mel_bins=16 if d.width <= 64 else 80,
        d_model=d.width,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=d.heads,
        decoder_attention_heads=d.heads,
        encoder_ffn_dim=d.ffn,
        decoder_ffn_dim=d.ffn,
        max_source_positions=d.audio,
        max_target_positions=max(64, d.seq),
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        suppress_tokens=[],
        begin_suppress_tokens=[],
    )
    features = torch.randn(1, config.num_mel_bins, 2 * config.max_source_positions)
    dec = torch.randint(0, d.vocab, (1, d.seq))
    # Without a decoder mask the mask code looks for packed sequences with torch.diff, which
    # TorchScript cannot export (aten::diff); the mask is what a real decoder export passes.
    inputs = {
        "input_features": features,
        "decoder_input_ids": dec,
        "decoder_attention_mask": torch.ones_like(dec),
    }
    return WhisperModel(config), inputs


def _vit(layers: int, d: Dims) -> tuple[Any, dict[str, Any]]:
    import torch
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(
        hidden_size=d.width,
        num_hidden_layers=layers,
        num_attention_heads=d.heads,
        intermediate_size=d.ffn,
        image_size=d.image,
        patch_size=d.patch,
    )
    return ViTModel(config, add_pooling_layer=False), {
        "pixel_values": torch.randn(1, 3, d.image, d.image)
    }


FAMILIES: dict[str, Callable[[int, Dims], tuple[Any, dict[str, Any]]]] = {
    "bert": _bert,
    "gpt2": _gpt2,
    "t5": _t5,
    "whisper": _whisper,
    "vit": _vit,
}
# what the first-view benchmark and its tests were measured on
DEFAULT_FAMILIES = ("bert", "gpt2", "t5", "whisper")


def missing() -> str | None:
    """Why exports cannot be made here (torch, transformers or onnxscript absent), or None."""
    for module in ("torch", "transformers", "onnxscript"):
        try:
            __import__(module)
        except ImportError as e:
            return f"{module} is not installed ({e}); pip install -e .[bench]"
    return None


def _positional(model: Any, names: Sequence[str]) -> Any:
    """``model`` re-classed so that forward takes ``names`` positionally and returns a tuple.

    TorchScript tracing passes inputs by position, and the Hugging Face forwards put optional
    arguments (GPT-2's past_key_values) between the ones we give; no key/value cache and tuples
    out make the plain forward pass that a viewer user most often opens. A subclass, not a
    wrapper module, so that node names keep the model's own scopes (/encoder/layer.0/...).
    """
    base = type(model)

    def forward(self: Any, *args: Any) -> Any:
        kwargs = dict(zip(names, args, strict=True))
        return base.forward(self, **kwargs, use_cache=False, return_dict=False)

    # Same module and name as the base: the dynamo exporter records them in node metadata.
    attrs = {"forward": forward, "__module__": base.__module__, "__qualname__": base.__qualname__}
    model.__class__ = type(base.__name__, (base,), attrs)
    return model


def quiet() -> None:
    """Silence the exporters' and transformers' progress logs so that tables stay readable."""
    import torch.onnx  # noqa: F401  (torch sets its loggers' levels on import)
    from transformers.utils import logging as hf_logging

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    hf_logging.set_verbosity_error()


def build(
    family: str, layers: int, hf_init: bool = False, size: str = "tiny"
) -> tuple[Any, dict[str, Any]]:
    """The model in eval mode with seeded random weights, and the inputs of one forward pass.

    Hugging Face's init makes every bias 0 and every norm scale 1, and TorchScript export
    merges initializers of equal value, leaving an Identity node per copy; a trained model has
    none of that. So, unless ``hf_init``, every weight gets its own noise; tied weights (GPT-2's
    head and embedding, T5's shared embedding) are one parameter and stay tied.
    """
    import torch

    torch.manual_seed(SEED)
    model, inputs = FAMILIES[family](layers, SIZES[size])
    if not hf_init:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p), alpha=0.02)
    return _positional(model.eval(), list(inputs)), inputs


def _reason(error: Exception) -> str:
    """The line of an exporter's error that says what broke (dynamo's first lines are advice)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if "## Exception summary" in lines:
        lines = lines[lines.index("## Exception summary") + 1 :]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:300]


def quiet_export(
    model: Any, args: tuple[Any, ...], path: Path, exporter: str, **options: Any
) -> None:
    """``torch.onnx.export`` by ``exporter`` ("ts" or "dynamo", at its opset in OPSETS),
    without gradients, warnings or the exporters' progress output."""
    import torch

    dynamo = exporter == "dynamo"
    with (
        torch.no_grad(),
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(path),
            opset_version=OPSETS[exporter],
            dynamo=dynamo,
            **options,
            **({"verbose": False} if dynamo else {}),
        )


def _export(
    family: str,
    layers: int,
    exporter: str,
    path: Path,
    attention: str | None,
    hf_init: bool,
    size: str,
) -> None:
    """Build and export one model to ``path``, quietly; ``attention`` overrides sdpa."""

    model, inputs = build(family, layers, hf_init, size)
    if attention:
        model.set_attn_implementation(attention)
    quiet_export(model, tuple(inputs.values()), path, exporter, input_names=list(inputs))
    onnx.checker.check_model(str(path))


def export_one(
    family: str,
    layers: int,
    exporter: str,
    out_dir: Path,
    hf_init: bool = False,
    size: str = "tiny",
) -> Export:
    """Export one model by one exporter to ``out_dir``; failures come back as ``error``.

    The models' default attention (sdpa) is tried first, as a user's export would; when that
    fails, eager attention is tried and the sdpa failure kept in ``note``.
    """
    name = (
        f"{family}_{layers}l_{exporter}"
        if size == "tiny"
        else f"{family}_{layers}l_{size}_{exporter}"
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.onnx"
    start = time.perf_counter()
    export = Export(name, family, layers, exporter, path, 0.0, size=size)
    try:
        _export(family, layers, exporter, path, None, hf_init, size)
    except Exception as sdpa:
        try:
            _export(family, layers, exporter, path, "eager", hf_init, size)
            export.note = f"sdpa failed ({_reason(sdpa)}); exported with eager attention"
        except Exception as eager:
            for stale in (path, path.with_name(path.name + ".data")):
                stale.unlink(missing_ok=True)
            export.path, export.error = None, f"{_reason(eager)} (sdpa: {_reason(sdpa)})"
    export.seconds = time.perf_counter() - start
    return export


def make_exports(
    out_dir: Path,
    layers: Sequence[int] = (4,),
    families: Sequence[str] = DEFAULT_FAMILIES,
    exporters: Sequence[str] = EXPORTERS,
    report: Callable[[Export], None] | None = None,
    hf_init: bool = False,
    size: str = "tiny",
) -> list[Export]:
    """Every family x layer count x exporter, written to ``out_dir`` (made if absent)."""
    done = []
    for n in layers:
        for family in families:
            for exporter in exporters:
                export = export_one(family, n, exporter, out_dir, hf_init, size)
                done.append(export)
                if report:
                    report(export)
    return done


def facts(path: Path) -> Facts:
    """Node count and the Identity nodes that only pass a weight on, read from the file."""
    model = onnx.load(str(path), load_external_data=False)
    g = model.graph
    inits = {t.name for t in g.initializer}
    weight_ids = sum(1 for n in g.node if n.op_type == "Identity" and n.input[0] in inits)
    return Facts(len(g.node), len(inits), weight_ids)


def describe(export: Export) -> str:
    """One line per export: where it went and how long it took, or why it failed."""
    if export.path is None:
        return f"{export.name:22} FAILED after {export.seconds:5.1f} s: {export.error}"
    f = facts(export.path)
    return (
        f"{export.name:22} {export.seconds:5.1f} s  {f.nodes:5d} nodes  "
        f"{f.weight_identities:3d} weight Identity  {export.path}"
        + (f"\n{'':22} note: {export.note}" if export.note else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--layers", type=int, nargs="+", default=[4])
    parser.add_argument(
        "--models", nargs="+", choices=list(FAMILIES), default=list(DEFAULT_FAMILIES)
    )
    parser.add_argument("--size", choices=list(SIZES), default="tiny")
    parser.add_argument("--exporters", nargs="+", choices=EXPORTERS, default=list(EXPORTERS))
    parser.add_argument(
        "--hf-init", action="store_true", help="keep Hugging Face's init (equal biases merge)"
    )
    args = parser.parse_args(argv)
    reason = missing()
    if reason:
        print(f"no torch exports: {reason}")
        return 1
    quiet()
    start = time.perf_counter()
    done = make_exports(
        args.out_dir,
        args.layers,
        args.models,
        args.exporters,
        lambda e: print(describe(e), flush=True),
        args.hf_init,
        args.size,
    )
    failed = sum(e.path is None for e in done)
    print(f"{len(done) - failed} of {len(done)} exports in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
