"""Opening a torch.export archive (.pt2): xocview's reader against torch.export.load, same run.

A GPT-2-shaped model (GPT2LMHeadModel from a transformers config, 12 layers of width 768 and
GPT-2's vocabulary by default: GPT-2 small, about 500 MB) is exported and saved once; then
`xocview.formats.pytorch.pt2.load` (the graph with every ATen node written as ONNX, module
groups, lazy weights) and `torch.export.load` (the ExportedProgram with its weights) open it
in alternation. Medians of --repeat runs and their median ratio are printed. Needs torch and
transformers (bench extras).

    python tests/perf/pt2_open.py [--layers 12] [--hidden 768] [--vocab 50257] [--repeat 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from timing import paired_times  # tests/perf/, beside us
from transformers import GPT2Config, GPT2LMHeadModel

from xocview.formats.pytorch import pt2
from xocview.formats.source import Source


class _Logits(torch.nn.Module):
    """The model's logits alone: torch.export.load cannot rebuild transformers' output types."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        self.gpt2 = GPT2LMHeadModel(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.gpt2(input_ids).logits


def export(path: Path, layers: int, hidden: int, vocab: int) -> None:
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=vocab,
        n_embd=hidden,
        n_layer=layers,
        n_head=max(hidden // 64, 1),
        n_positions=1024,
        use_cache=False,
    )
    model = _Logits(config).eval()
    ep = torch.export.export(model, (torch.randint(0, vocab, (1, 16)),))
    torch.export.save(ep, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpt2.pt2"
        export(path, args.layers, args.hidden, args.vocab)
        graph = pt2.load(Source(path))
        leaves = sum("children_ids" not in n.metadata for n in graph.nodes)
        weights = sum(t.kind == "weight" and "fqn" in t.metadata for t in graph.tensors)
        print(
            f"model: GPT-2 with {args.layers} layers of width {args.hidden}, "
            f"{path.stat().st_size / 1e6:.0f} MB; xocview: {len(graph.nodes):,} nodes "
            f"({leaves:,} ONNX leaves), {weights} weights; median of {args.repeat} runs"
        )
        del graph
        t_torch, t_ours, ratio = paired_times(
            lambda: torch.export.load(path), lambda: pt2.load(Source(path)), args.repeat
        )
        print(f"torch.export.load: {t_torch * 1000:8.1f} ms")
        print(f"xocview pt2.load:  {t_ours * 1000:8.1f} ms")
        print(f"ratio xocview / torch: {ratio:.3f}")


if __name__ == "__main__":
    main()
