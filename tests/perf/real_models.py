"""Real mid-size vision and OCR architectures built in PyTorch and exported to ONNX by both
exporters: the "real models" rows of issue 29's speed target.

Nothing is downloaded: each model is its published architecture written out here, at the size
its shipped files have, with seeded random weights (BatchNorm statistics too), BatchNorm folded
into the convolutions before export as the model's own export scripts do (Ultralytics fuses,
paddle2onnx writes inference programs without BatchNormalization nodes):

- yolov8n: Ultralytics YOLOv8n at 640x640 (Conv+BN+SiLU, C2f split/concat, SPPF max-pools,
  upsample + concat neck, decoupled head with the DFL softmax and Sigmoid class scores), 3.2M
  parameters, output [1, 84, 8400];
- dbnet: PP-OCR's DB text detector at 640x640 (MobileNetV3-large backbone with HardSwish and
  squeeze-excite by HardSigmoid, residual-SE FPN with upsample + add, the DB head with two
  ConvTranspose and a Sigmoid);
- svtr: an SVTR-small text recognizer at 48x320 as PP-OCR runs it (conv stem, local and global
  mixing blocks of LayerNorm + attention + GELU MLP, patch merging, CTC linear + softmax over
  PP-OCR's 6625 characters);
- crnn: the CRNN of Shi et al. at 32x128 grey (7 convolutions, two bidirectional LSTMs each
  with its linear, 37 classes), 8.3M parameters.

Needs the bench extra (torch, onnxscript).

    python tests/perf/real_models.py [OUT_DIR]   (default /tmp/realmodels)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from torch_exports import EXPORTERS, SEED, quiet, quiet_export  # tests/perf/, beside us

OUT_DIR = Path("/tmp/realmodels")


def _yolov8n() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    def conv(c1: int, c2: int, k: int = 1, s: int = 1) -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(c1, c2, k, s, k // 2, bias=False), nn.BatchNorm2d(c2), nn.SiLU()
        )

    class C2f(nn.Module):
        def __init__(self, c1: int, c2: int, n: int, shortcut: bool) -> None:
            super().__init__()
            self.c = c2 // 2
            self.cv1, self.cv2 = conv(c1, 2 * self.c), conv((2 + n) * self.c, c2)
            self.m = nn.ModuleList(
                nn.Sequential(conv(self.c, self.c, 3), conv(self.c, self.c, 3)) for _ in range(n)
            )
            self.shortcut = shortcut

        def forward(self, x: Any) -> Any:
            y = list(self.cv1(x).split((self.c, self.c), 1))
            for m in self.m:
                y.append(y[-1] + m(y[-1]) if self.shortcut else m(y[-1]))
            return self.cv2(torch.cat(y, 1))

    class SPPF(nn.Module):
        def __init__(self, c1: int, c2: int) -> None:
            super().__init__()
            self.cv1, self.cv2 = conv(c1, c1 // 2), conv(c1 * 2, c2)
            self.m = nn.MaxPool2d(5, 1, 2)

        def forward(self, x: Any) -> Any:
            y = [self.cv1(x)]
            y.extend(self.m(y[-1]) for _ in range(3))
            return self.cv2(torch.cat(y, 1))

    class YOLOv8n(nn.Module):
        def __init__(self, size: int = 640, nc: int = 80, reg: int = 16) -> None:
            super().__init__()
            self.b1 = nn.Sequential(conv(3, 16, 3, 2), conv(16, 32, 3, 2), C2f(32, 32, 1, True))
            self.b2 = nn.Sequential(conv(32, 64, 3, 2), C2f(64, 64, 2, True))
            self.b3 = nn.Sequential(conv(64, 128, 3, 2), C2f(128, 128, 2, True))
            self.b4 = nn.Sequential(conv(128, 256, 3, 2), C2f(256, 256, 1, True), SPPF(256, 256))
            self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
            self.n1, self.n2 = C2f(384, 128, 1, False), C2f(192, 64, 1, False)
            self.d1, self.n3 = conv(64, 64, 3, 2), C2f(192, 128, 1, False)
            self.d2, self.n4 = conv(128, 128, 3, 2), C2f(384, 256, 1, False)
            self.nc, self.reg = nc, reg
            self.box = nn.ModuleList(
                nn.Sequential(conv(c, 64, 3), conv(64, 64, 3), nn.Conv2d(64, 4 * reg, 1))
                for c in (64, 128, 256)
            )
            self.cls = nn.ModuleList(
                nn.Sequential(conv(c, 80, 3), conv(80, 80, 3), nn.Conv2d(80, nc, 1))
                for c in (64, 128, 256)
            )
            self.dfl = nn.Conv2d(reg, 1, 1, bias=False).requires_grad_(False)
            self.dfl.weight.data[:] = torch.arange(reg, dtype=torch.float).view(1, reg, 1, 1)
            anchors, strides = [], []
            for stride in (8, 16, 32):
                n = size // stride
                sy, sx = torch.meshgrid(torch.arange(n) + 0.5, torch.arange(n) + 0.5, indexing="ij")
                anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
                strides.append(torch.full((n * n, 1), float(stride)))
            self.register_buffer("anchors", torch.cat(anchors).transpose(0, 1).unsqueeze(0))
            self.register_buffer("strides", torch.cat(strides).transpose(0, 1))

        def forward(self, x: Any) -> Any:
            p3 = self.b2(self.b1(x))
            p4 = self.b3(p3)
            p5 = self.b4(p4)
            h4 = self.n1(torch.cat([self.up(p5), p4], 1))
            o3 = self.n2(torch.cat([self.up(h4), p3], 1))
            o4 = self.n3(torch.cat([self.d1(o3), h4], 1))
            o5 = self.n4(torch.cat([self.d2(o4), p5], 1))
            heads = zip((o3, o4, o5), self.box, self.cls, strict=True)
            feats = [torch.cat([b(f), c(f)], 1) for f, b, c in heads]
            y = torch.cat([f.view(1, 4 * self.reg + self.nc, -1) for f in feats], 2)
            box, cls = y.split((4 * self.reg, self.nc), 1)
            a = box.shape[-1]
            dist = self.dfl(box.view(1, 4, self.reg, a).transpose(2, 1).softmax(1)).view(1, 4, a)
            lt, rb = dist.chunk(2, 1)
            x1y1, x2y2 = self.anchors - lt, self.anchors + rb
            xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * self.strides
            return torch.cat((xywh, cls.sigmoid()), 1)

    return YOLOv8n(), (torch.rand(1, 3, 640, 640),)


def _dbnet() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn
    from torch.nn import functional as F

    def cba(c1: int, c2: int, k: int, s: int = 1, groups: int = 1, act: Any = None) -> Any:
        layers = [nn.Conv2d(c1, c2, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(c2)]
        return nn.Sequential(*layers, *([act()] if act else []))

    class SE(nn.Module):  # squeeze-excite, gated by HardSigmoid as PP-OCR's
        def __init__(self, c: int) -> None:
            super().__init__()
            self.down, self.up = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

        def forward(self, x: Any) -> Any:
            s = F.adaptive_avg_pool2d(x, 1)
            return x * F.hardsigmoid(self.up(F.relu(self.down(s))))

    class Unit(nn.Module):  # MobileNetV3 inverted residual
        def __init__(self, c1: int, mid: int, c2: int, k: int, s: int, se: bool, act: Any):
            super().__init__()
            self.body = nn.Sequential(
                cba(c1, mid, 1, act=act),
                cba(mid, mid, k, s, mid, act),
                *([SE(mid)] if se else []),
                cba(mid, c2, 1),
            )
            self.res = s == 1 and c1 == c2

        def forward(self, x: Any) -> Any:
            return x + self.body(x) if self.res else self.body(x)

    relu, hs = nn.ReLU, nn.Hardswish
    # MobileNetV3-large: kernel, expansion, out, SE, activation, stride
    cfg = [
        (3, 16, 16, False, relu, 1), (3, 64, 24, False, relu, 2), (3, 72, 24, False, relu, 1),
        (5, 72, 40, True, relu, 2), (5, 120, 40, True, relu, 1), (5, 120, 40, True, relu, 1),
        (3, 240, 80, False, hs, 2), (3, 200, 80, False, hs, 1), (3, 184, 80, False, hs, 1),
        (3, 184, 80, False, hs, 1), (3, 480, 112, True, hs, 1), (3, 672, 112, True, hs, 1),
        (5, 672, 160, True, hs, 2), (5, 960, 160, True, hs, 1), (5, 960, 160, True, hs, 1),
    ]  # fmt: skip

    class RSE(nn.Module):  # PP-OCRv3's residual squeeze-excite FPN layer
        def __init__(self, c1: int, c2: int, k: int) -> None:
            super().__init__()
            self.conv, self.se = nn.Conv2d(c1, c2, k, padding=k // 2, bias=False), SE(c2)

        def forward(self, x: Any) -> Any:
            y = self.conv(x)
            return y + self.se(y)

    class DBNet(nn.Module):
        def __init__(self, fpn: int = 96) -> None:
            super().__init__()
            self.stem = cba(3, 16, 3, 2, act=hs)
            stages: list[list[nn.Module]] = [[]]
            c, outs = 16, []
            for i, (k, e, o, se, act, s) in enumerate(cfg):
                if i in (3, 6, 12):  # strides 4, 8, 16 end before these
                    outs.append(c)
                    stages.append([])
                stages[-1].append(Unit(c, e, o, k, s, se, act))
                c = o
            stages[-1].append(cba(c, 960, 1, act=hs))
            outs.append(960)
            self.stages = nn.ModuleList(nn.Sequential(*s) for s in stages)
            self.ins = nn.ModuleList(RSE(c, fpn, 1) for c in outs)
            self.inp = nn.ModuleList(RSE(fpn, fpn // 4, 3) for _ in outs)
            q = fpn // 4
            self.head = nn.Sequential(
                cba(fpn, q, 3, act=relu),
                nn.ConvTranspose2d(q, q, 2, 2, bias=False), nn.BatchNorm2d(q), nn.ReLU(),
                nn.ConvTranspose2d(q, 1, 2, 2), nn.Sigmoid(),
            )  # fmt: skip

        def forward(self, x: Any) -> Any:
            feats, x = [], self.stem(x)
            for stage in self.stages:
                x = stage(x)
                feats.append(x)
            c2, c3, c4, c5 = (f(x) for f, x in zip(self.ins, feats, strict=True))
            o4 = c4 + F.interpolate(c5, scale_factor=2.0, mode="nearest")
            o3 = c3 + F.interpolate(o4, scale_factor=2.0, mode="nearest")
            o2 = c2 + F.interpolate(o3, scale_factor=2.0, mode="nearest")
            ps = [f(x) for f, x in zip(self.inp, (o2, o3, o4, c5), strict=True)]
            ps = [p if i == 0 else F.interpolate(p, scale_factor=2.0**i) for i, p in enumerate(ps)]
            return self.head(torch.cat(ps[::-1], 1))

    return DBNet(), (torch.rand(1, 3, 640, 640),)


def _svtr() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim: int, heads: int, mask: Any) -> None:
            super().__init__()
            self.heads, self.scale = heads, (dim // heads) ** -0.5
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.register_buffer("mask", mask)

        def forward(self, x: Any) -> Any:
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
            att = q @ k.transpose(-2, -1)
            if self.mask is not None:
                att = att + self.mask
            y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c)
            return self.proj(y)

    class Block(nn.Module):  # SVTR's post-norm mixing block
        def __init__(self, dim: int, heads: int, mask: Any) -> None:
            super().__init__()
            self.mixer, self.norm1 = Attention(dim, heads, mask), nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            self.norm2 = nn.LayerNorm(dim, eps=1e-6)

        def forward(self, x: Any) -> Any:
            x = self.norm1(x + self.mixer(x))
            return self.norm2(x + self.mlp(x))

    def local_mask(h: int, w: int, hk: int = 7, wk: int = 11) -> Any:
        """-inf outside each token's hk x wk window, as SVTR's local mixing adds."""
        ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
        ys, xs = ys.reshape(-1), xs.reshape(-1)
        dy, dx = (ys[:, None] - ys[None]).abs(), (xs[:, None] - xs[None]).abs()
        near = (dy <= hk // 2) & (dx <= wk // 2)
        return torch.zeros(h * w, h * w).masked_fill(~near, float("-inf"))

    class SVTR(nn.Module):
        def __init__(self, hw: tuple[int, int] = (12, 80), classes: int = 6625) -> None:
            super().__init__()
            dims, depths, heads = (96, 192, 256), (3, 6, 6), (3, 6, 8)
            self.embed = nn.Sequential(
                nn.Conv2d(3, 48, 3, 2, 1, bias=False), nn.BatchNorm2d(48), nn.GELU(),
                nn.Conv2d(48, 96, 3, 2, 1, bias=False), nn.BatchNorm2d(96), nn.GELU(),
            )  # fmt: skip
            self.pos = nn.Parameter(torch.randn(1, hw[0] * hw[1], 96) * 0.02)
            self.stages, self.merges, self.hws = nn.ModuleList(), nn.ModuleList(), []
            mixers, h, w = ["local"] * 6 + ["global"] * 6, *hw
            for i, (dim, depth, head) in enumerate(zip(dims, depths, heads, strict=True)):
                kinds, mixers = mixers[:depth], mixers[depth:]
                masks = [local_mask(h, w) if m == "local" else None for m in kinds]
                self.stages.append(nn.Sequential(*(Block(dim, head, m) for m in masks)))
                self.hws.append((h, w))
                if i < 2:
                    self.merges.append(nn.Conv2d(dim, dims[i + 1], 3, (2, 1), 1))
                    h = (h + 1) // 2
            self.norms = nn.ModuleList(nn.LayerNorm(d) for d in dims[1:])
            self.pool = nn.AdaptiveAvgPool2d((1, hw[1] // 2))
            self.last = nn.Sequential(nn.Conv2d(256, 192, 1, bias=False), nn.Hardswish())
            self.ctc = nn.Linear(192, classes)

        def forward(self, x: Any) -> Any:
            x = self.embed(x).flatten(2).transpose(1, 2) + self.pos
            for i, stage in enumerate(self.stages):
                x = stage(x)
                h, w = self.hws[i]
                x = x.transpose(1, 2).reshape(1, -1, h, w)
                if i < 2:
                    x = self.norms[i](self.merges[i](x).flatten(2).transpose(1, 2))
            x = self.last(self.pool(x)).squeeze(2).transpose(1, 2)
            return self.ctc(x).softmax(-1)

    return SVTR(), (torch.rand(1, 3, 48, 320),)


def _crnn() -> tuple[Any, tuple[Any, ...]]:
    import torch
    from torch import nn

    class BiLSTM(nn.Module):
        def __init__(self, c1: int, hidden: int, c2: int) -> None:
            super().__init__()
            self.rnn, self.out = nn.LSTM(c1, hidden, bidirectional=True), nn.Linear(2 * hidden, c2)

        def forward(self, x: Any) -> Any:
            y, _ = self.rnn(x)
            t, b, h = y.shape
            return self.out(y.reshape(t * b, h)).view(t, b, -1)

    class CRNN(nn.Module):  # Shi et al., as crnn.pytorch writes it
        def __init__(self, classes: int = 37) -> None:
            super().__init__()
            layers: list[nn.Module] = []
            chans, c1 = (64, 128, 256, 256, 512, 512, 512), 1
            for i, c2 in enumerate(chans):
                k = 2 if i == 6 else 3
                layers.append(nn.Conv2d(c1, c2, k, 1, 1 if k == 3 else 0))
                layers += [nn.BatchNorm2d(c2)] if i in (2, 4, 6) else []
                layers.append(nn.ReLU())
                if i in (0, 1):
                    layers.append(nn.MaxPool2d(2, 2))
                elif i in (3, 5):
                    layers.append(nn.MaxPool2d((2, 2), (2, 1), (0, 1)))
                c1 = c2
            self.cnn = nn.Sequential(*layers)
            self.rnn = nn.Sequential(BiLSTM(512, 256, 256), BiLSTM(256, 256, classes))

        def forward(self, x: Any) -> Any:
            return self.rnn(self.cnn(x).squeeze(2).permute(2, 0, 1))

    return CRNN(), (torch.rand(1, 1, 32, 128),)


MODELS: dict[str, Callable[[], tuple[Any, tuple[Any, ...]]]] = {
    "yolov8n": _yolov8n,
    "dbnet": _dbnet,
    "svtr": _svtr,
    "crnn": _crnn,
}


def fold_batchnorm(module: Any) -> Any:
    """Every BatchNorm2d right after a convolution in a Sequential folded into it (the export
    of an inference model: Ultralytics' fuse(), paddle's inference program)."""
    from torch import nn
    from torch.nn.utils.fusion import fuse_conv_bn_eval

    for seq in [m for m in module.modules() if isinstance(m, nn.Sequential)]:
        for i in range(1, len(seq)):
            conv, bn = seq[i - 1], seq[i]
            if isinstance(bn, nn.BatchNorm2d) and isinstance(conv, nn.Conv2d | nn.ConvTranspose2d):
                transpose = isinstance(conv, nn.ConvTranspose2d)
                seq[i - 1] = fuse_conv_bn_eval(conv, bn, transpose=transpose)
                seq[i] = nn.Identity()
    return module


def build(name: str) -> tuple[Any, tuple[Any, ...]]:
    """The model in eval mode with seeded weights and BatchNorm statistics (folded), and its
    example input."""
    import torch
    from torch import nn

    torch.manual_seed(SEED)
    model, inputs = MODELS[name]()
    with torch.no_grad():
        for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_(0.0, 0.1)
            bn.running_mean.normal_(0.0, 0.1)
            bn.running_var.uniform_(0.5, 1.5)
    return fold_batchnorm(model.eval()), inputs


def parameters(name: str) -> int:
    """How many weights the model has (BatchNorm folded)."""
    return sum(p.numel() for p in build(name)[0].parameters())


def feeds_of(name: str) -> dict[str, np.ndarray]:
    """The example input by the name both exporters give it."""
    return {"input": build(name)[1][0].numpy()}


def export_real(out_dir: Path = OUT_DIR, names: tuple[str, ...] = tuple(MODELS)) -> list[Path]:
    """Every model by both exporters into ``out_dir`` as NAME_EXPORTER.onnx (input "input");
    an export that fails is left out and said on stderr."""
    quiet()
    out_dir.mkdir(parents=True, exist_ok=True)
    done = []
    for name in names:
        for exporter in EXPORTERS:
            model, inputs = build(name)
            path = out_dir / f"{name}_{exporter}.onnx"
            try:
                quiet_export(model, inputs, path, exporter, input_names=["input"])
                done.append(path)
            except Exception as e:  # an exporter's limits: report, go on
                print(f"{path.name}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    return done


if __name__ == "__main__":
    for p in export_real(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT_DIR):
        print(f"{p}  ({parameters(p.stem.rsplit('_', 1)[0]) / 1e6:.2f}M parameters)")
