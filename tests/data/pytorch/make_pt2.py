"""Make the torch.export test archives with torch and transformers (not installed by `make`):
`.venv/bin/python tests/data/pytorch/make_pt2.py`. Seeded, so a rerun makes the same models.

Each `pt2_<name>.pt2` is written by torch.export.save, then re-zipped with its JSON members
deflated (torch stores them; deflating keeps the files small) and its tensor payloads stored,
as torch writes them; torch.export.load reads the result. `pt2_<name>.npz` holds the inputs
(`in.<name>`) and torch's outputs (`out.<k>`) of the exported program.

- cnn: conv / batch norm / relu / max pool / adaptive average pool / flatten / linear
- cnn_core: the same program after run_decompositions() (core ATen: convolution,
  _native_batch_norm_legit_no_training, addmm, ...)
- bert: a 2-layer BERT (hidden 32) from a transformers config, padded attention mask
- gpt2: a 2-layer GPT-2 (hidden 32) from a transformers config; gpt2_core after
  run_decompositions() (bmm, _softmax, native_layer_norm, ...)
- dynamic: a small attention block exported with a dynamic batch dimension (sym_size, views
  of symbolic sizes), its outputs computed at batch 3
- ops: one module using many other ATen ops (splits, indexing, factories, reductions, ...)
- ops_core: the same after run_decompositions()
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

HERE = Path(__file__).parent


class Cnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


class Bert(nn.Module):
    """BertModel returning a tuple (torch.export.load cannot rebuild transformers' outputs)."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import BertConfig, BertModel

        config = BertConfig(
            vocab_size=100,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=32,
        )
        self.bert = BertModel(config)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple:
        out = self.bert(input_ids, attention_mask=attention_mask)
        return out.last_hidden_state, out.pooler_output


class Gpt2(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(
            vocab_size=100,
            n_embd=32,
            n_layer=2,
            n_head=2,
            n_positions=32,
            use_cache=False,
            bos_token_id=0,
            eos_token_id=0,
        )
        self.gpt2 = GPT2LMHeadModel(config)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.gpt2(input_ids).logits


class Block(nn.Module):
    """Attention over a batch of sequences, written with the batch size read from the input."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.norm = nn.LayerNorm(16)
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        b, n = ids.shape[0], ids.shape[1]
        x = self.norm(self.embed(ids))
        q, k, v = self.qkv(x).view(b, n, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, 16)) + x


class Ops(nn.Module):
    """Many ATen ops the other models do not use, each on a small value."""

    def __init__(self) -> None:
        super().__init__()
        self.conv_t = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.register_buffer("table", torch.arange(12.0).reshape(3, 4))

    def forward(self, x: torch.Tensor, idx: torch.Tensor) -> tuple:
        a, b = torch.chunk(x, 2, dim=1)  # x: [2, 4, 6, 6]
        y = torch.cat([F.silu(a), torch.clamp(b, -0.5, 0.5)], dim=1)
        y = self.gn(y)
        z = self.conv_t(y)  # [2, 2, 12, 12]
        z = F.avg_pool2d(z, 2) + F.pad(z, (1, 1, 2, 0))[:, :, 2:, 1:-1][:, :, ::2, ::2]
        s = torch.softmax(z.flatten(2), dim=-1).sum(-1)  # [2, 2]
        m = z.amax(dim=(2, 3)) - z.mean(dim=(2, 3)).pow(2) * torch.rsqrt(z.var(dim=(2, 3)) + 1)
        v, i = z.flatten(1).max(dim=1)
        w = torch.where(m > 0, m, torch.full_like(m, -1.0)).masked_fill(s < 0.5, 3.0)
        t = self.table[idx] + self.table.index_select(1, idx[:2]).sum() / 3
        c = torch.cumsum(torch.arange(6) * 2, 0).float()[None].expand(2, 6) - 1
        tri = torch.tril(torch.ones(4, 4)) @ torch.triu(t.T[:4, :4] if t.shape[1] >= 4 else t)
        g = torch.gather(z.flatten(1), 1, torch.topk(z.flatten(1), 3).indices)
        h = torch.stack([v, i.float(), z.flatten(1).argmax(1).float()], 1)
        sel = z.select(1, 0).squeeze(0).unsqueeze(1).flip(-1)[..., 3:9].narrow(-2, 0, 1)
        r = (x.abs().sqrt() + x.exp().log1p() - torch.sigmoid(x) * torch.tanh(x)) // 0.5 % 3
        return w, t, c, tri, g, h, sel, r.sum(dim=(2, 3)), F.gelu(y, approximate="tanh").std()


class Decoder(nn.Module):
    """Upsampling as decoders and feature pyramids write it: F.interpolate by scale and by
    size, nearest, bilinear (with and without align_corners) and bicubic."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.up = nn.ConvTranspose2d(4, 4, 2, stride=2)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        f = torch.relu(self.conv(x))
        a = F.interpolate(f, scale_factor=2, mode="nearest")
        b = F.interpolate(f, size=(11, 7), mode="bilinear", align_corners=False)
        c = F.interpolate(f, scale_factor=1.5, mode="bilinear", align_corners=True)
        d = F.interpolate(f, size=(9, 9), mode="bicubic", align_corners=False)
        return a + self.up(f), b, c, d


class Rnn(nn.Module):
    """Recurrent layers: a 2-layer batch-first LSTM, a bidirectional LSTM on its output
    (sequence first) and a 2-layer bidirectional GRU; every output and final state."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.bi = nn.LSTM(6, 3, bidirectional=True)
        self.gru = nn.GRU(6, 5, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y, (h, c) = self.lstm(x)
        z, _ = self.bi(y.transpose(0, 1))
        g, hg = self.gru(y)
        return y, h, c, z, g, hg


def _rezip(path: Path) -> None:
    """Deflate the JSON members (torch stores everything), keep payloads stored."""
    src = zipfile.ZipFile(path)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            kind = zipfile.ZIP_DEFLATED if info.filename.endswith(".json") else zipfile.ZIP_STORED
            z = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            z.compress_type = kind
            dst.writestr(z, data, compresslevel=9 if kind == zipfile.ZIP_DEFLATED else None)
    src.close()
    path.write_bytes(out.getvalue())


def _save(name: str, ep: torch.export.ExportedProgram, inputs: dict[str, torch.Tensor]) -> None:
    path = HERE / f"pt2_{name}.pt2"
    torch.export.save(ep, path)
    _rezip(path)
    loaded = torch.export.load(path)
    with torch.no_grad():
        outs = loaded.module()(*inputs.values())
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    arrays = {f"in.{k}": v.numpy() for k, v in inputs.items()}
    arrays |= {f"out.{k}": o.detach().numpy() for k, o in enumerate(outs)}
    np.savez_compressed(HERE / f"pt2_{name}.npz", **arrays)
    print(f"{path.name}: {path.stat().st_size:,} bytes, {len(ep.graph.nodes)} FX nodes")


def _eval(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):  # statistics that are not 0 and 1
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def decoder() -> None:
    torch.manual_seed(5)
    inputs = {"x": torch.randn(1, 3, 6, 6)}
    ep = torch.export.export(_eval(Decoder()), tuple(inputs.values()))
    _save("decoder", ep, inputs)
    _save("decoder_core", ep.run_decompositions(), inputs)


def rnn() -> None:
    torch.manual_seed(6)
    inputs = {"x": torch.randn(2, 5, 4)}
    _save("rnn", torch.export.export(_eval(Rnn()), tuple(inputs.values())), inputs)


def main() -> None:
    torch.manual_seed(0)
    cnn = _eval(Cnn())
    x = {"x": torch.randn(1, 3, 16, 16)}
    ep = torch.export.export(cnn, tuple(x.values()))
    _save("cnn", ep, x)
    _save("cnn_core", ep.run_decompositions(), x)

    torch.manual_seed(1)
    bert = Bert().eval()
    ids = torch.randint(0, 100, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    inputs = {"input_ids": ids, "attention_mask": mask}
    _save("bert", torch.export.export(bert, tuple(inputs.values())), inputs)

    torch.manual_seed(2)
    gpt2 = Gpt2().eval()
    inputs = {"input_ids": torch.randint(0, 100, (1, 8))}
    ep = torch.export.export(gpt2, tuple(inputs.values()))
    _save("gpt2", ep, inputs)
    _save("gpt2_core", ep.run_decompositions(), inputs)

    torch.manual_seed(3)
    block = Block().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    example = (torch.randint(0, 50, (2, 5)),)
    ep = torch.export.export(block, example, dynamic_shapes=({0: batch},))
    _save("dynamic", ep, {"ids": torch.randint(0, 50, (3, 5))})

    torch.manual_seed(4)
    ops = Ops().eval()
    inputs = {"x": torch.randn(2, 4, 6, 6), "idx": torch.tensor([2, 0, 1])}
    ep = torch.export.export(ops, tuple(inputs.values()))
    _save("ops", ep, inputs)
    _save("ops_core", ep.run_decompositions(), inputs)


if __name__ == "__main__":
    import sys

    only = {"decoder": decoder, "rnn": rnn}
    if sys.argv[1:] and sys.argv[1] in only:
        only[sys.argv[1]]()
    else:
        main()
        decoder()
        rnn()
