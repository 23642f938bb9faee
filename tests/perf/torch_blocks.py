"""Small PyTorch blocks exported to ONNX by both exporters: the models that run in well under a
millisecond, where a runtime's fixed cost per node shows (issue 18's "small exporter models").

ResNet basic block, MobileNet-v2 inverted residual, one BERT encoder layer, a U-Net
down-and-up block and a two-layer LSTM, seeded random weights, exported with TorchScript
(opset 17) and dynamo (opset 18). Needs the bench extra (torch, onnxscript).

    python tests/perf/torch_blocks.py OUT_DIR
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch_exports import EXPORTERS, SEED, quiet_export  # tests/perf/, beside us


def _blocks() -> dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]]:
    import torch
    from torch import nn

    class Basic(nn.Module):  # ResNet basic block
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
            self.c2, self.b2 = nn.Conv2d(32, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)

        def forward(self, x: Any) -> Any:
            y = torch.relu(self.b1(self.c1(x)))
            return torch.relu(self.b2(self.c2(y)) + x)

    class Inverted(nn.Module):  # MobileNet-v2 inverted residual
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(16, 96, 1, bias=False),
                nn.BatchNorm2d(96),
                nn.ReLU6(),
                nn.Conv2d(96, 96, 3, padding=1, groups=96, bias=False),
                nn.BatchNorm2d(96),
                nn.ReLU6(),
                nn.Conv2d(96, 16, 1, bias=False),
                nn.BatchNorm2d(16),
            )

        def forward(self, x: Any) -> Any:
            return x + self.body(x)

    class Down(nn.Module):  # U-Net: conv, pool, conv, upsample, concat
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
            self.mid = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
            self.dec = nn.Conv2d(32, 8, 3, padding=1)

        def forward(self, x: Any) -> Any:
            e = self.enc(x)
            m = self.mid(nn.functional.max_pool2d(e, 2))
            u = nn.functional.interpolate(m, scale_factor=2.0, mode="nearest")
            return self.dec(torch.cat([e, u], dim=1))

    class Recurrent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(32, 64, num_layers=2, batch_first=True)

        def forward(self, x: Any) -> Any:
            return self.lstm(x)[0]

    class Encoder(nn.Module):  # one BERT layer, attention written out as BERT's code does
        def __init__(self, dim: int = 64, heads: int = 4) -> None:
            super().__init__()
            self.heads = heads
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
            self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).unbind(2)
            q, k, v = (z.transpose(1, 2) for z in (q, k, v))
            att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, d)
            x = self.n1(x + self.proj(y))
            return self.n2(x + self.ff(x))

    def bert() -> tuple[Any, tuple[Any, ...]]:
        return Encoder(), (torch.randn(2, 16, 64),)

    return {
        "resnet_block": lambda: (Basic(), (torch.randn(1, 32, 16, 16),)),
        "mobilenet_block": lambda: (Inverted(), (torch.randn(1, 16, 16, 16),)),
        "bert_layer": bert,
        "unet_block": lambda: (Down(), (torch.randn(1, 8, 32, 32),)),
        "lstm": lambda: (Recurrent(), (torch.randn(2, 10, 32),)),
    }


def export_blocks(out_dir: Path) -> list[Path]:
    """Every block by both exporters into ``out_dir``; a block an exporter fails on is left
    out (said on stderr)."""
    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for name, make in _blocks().items():
        for exporter in EXPORTERS:
            torch.manual_seed(SEED)
            model, inputs = make()
            model.eval()
            path = out_dir / f"{name}_{exporter}.onnx"
            try:
                quiet_export(model, inputs, path, exporter)
                done.append(path)
            except Exception as e:  # an exporter's limits: report, go on
                print(f"{path.name}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    return done


if __name__ == "__main__":
    for p in export_blocks(Path(sys.argv[1] if len(sys.argv) > 1 else "blocks")):
        print(p)
