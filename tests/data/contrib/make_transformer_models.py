"""Makes the optimized transformer files of tests/executor/test_contrib_models.py (run by hand;
torch and transformers are not in the test extra):

    .venv/bin/python tests/data/contrib/make_transformer_models.py

Tiny seeded models (hidden 16, 2 heads, 2 layers, vocabularies of 40) are exported by torch's
TorchScript exporter and rewritten by the tools a user runs: onnxruntime's transformer optimizer
(bert and gpt2 model types, with and without its options) and onnxruntime's own level-2 graph
optimizer (session's optimized_model_filepath), which writes FusedConv, FusedMatMul, QuickGelu.
Each file keeps its weights inside and stays well under 200 KB.
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import onnx
import onnxruntime as ort
import torch
from onnxruntime.transformers.fusion_options import FusionOptions
from onnxruntime.transformers.optimizer import optimize_model

HERE = Path(__file__).parent
HIDDEN, HEADS, LAYERS, VOCAB, SEQ = 16, 2, 2, 40, 8


def _export(
    model: torch.nn.Module, args: tuple, names: list[str], path: Path, opset: int = 14
) -> None:
    model.eval()
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(path),
            input_names=names,
            output_names=["out"],
            dynamic_axes={**axes, "out": {0: "batch", 1: "sequence"}},
            opset_version=opset,
            dynamo=False,
        )


def _bert(raw: Path) -> None:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=2 * HIDDEN,
        max_position_embeddings=SEQ * 2,
        type_vocab_size=2,
        attn_implementation="eager",
    )

    class Bert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel(config, add_pooling_layer=False)

        def forward(
            self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor
        ) -> torch.Tensor:
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]

    ids = torch.randint(0, VOCAB, (2, SEQ))
    _export(
        Bert(),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        ["input_ids", "attention_mask", "token_type_ids"],
        raw,
    )


def _gpt2(raw: Path) -> None:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(1)
    config = GPT2Config(
        vocab_size=VOCAB,
        n_embd=HIDDEN,
        n_layer=LAYERS,
        n_head=HEADS,
        n_positions=SEQ * 2,
        attn_implementation="eager",
    )

    class Gpt2(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gpt = GPT2Model(config)

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.gpt(input_ids=ids, attention_mask=mask, use_cache=False)[0]

    ids = torch.randint(0, VOCAB, (2, SEQ))
    _export(Gpt2(), (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], raw)


def _encoder(raw: Path) -> None:
    """torch.nn.TransformerEncoder, the kind of model without a Hugging Face class."""
    torch.manual_seed(2)
    layer = torch.nn.TransformerEncoderLayer(
        HIDDEN, HEADS, 2 * HIDDEN, dropout=0.0, batch_first=True
    )
    encoder = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
    _export(encoder, (torch.randn(2, SEQ, HIDDEN),), ["x"], raw)


class _Fusable(torch.nn.Module):
    """Patterns onnxruntime's own graph optimizer fuses: Conv + activation (FusedConv),
    Transpose + MatMul * scale (FusedMatMul), x * sigmoid(1.702 x) (QuickGelu)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.proj = torch.nn.Parameter(torch.randn(6, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv1(x))
        y = torch.sigmoid(self.conv2(y))
        flat = y.flatten(2)  # (N, 8, HW)
        z = torch.matmul(flat.transpose(1, 2), self.proj.t()) * 0.5  # (N, HW, 6)
        return z * torch.sigmoid(1.702 * z)


def _fusable(raw: Path) -> None:
    torch.manual_seed(3)
    _export(_Fusable(), (torch.randn(1, 3, 6, 6),), ["x"], raw, opset=17)


def _ort_optimized(raw: Path, out: Path) -> None:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(out)
    ort.InferenceSession(str(raw), opts, providers=["CPUExecutionProvider"])


def _optimize(raw: Path, out: Path, model_type: str, **options: bool) -> None:
    fusion = FusionOptions(model_type)
    for name, value in options.items():
        setattr(fusion, name, value)
    model = optimize_model(
        str(raw),
        model_type=model_type,
        num_heads=HEADS,
        hidden_size=HIDDEN,
        optimization_options=fusion,
    )
    model.save_model_to_file(str(out))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        bert, gpt2, encoder, fusable = (
            work / f"{n}.onnx" for n in ("bert", "gpt2", "encoder", "fusable")
        )
        _bert(bert)
        _gpt2(gpt2)
        _encoder(encoder)
        _fusable(fusable)
        _optimize(bert, HERE / "bert_optimized.onnx", "bert")
        _optimize(bert, HERE / "bert_fast_gelu.onnx", "bert", enable_gelu_approximation=True)
        _optimize(bert, HERE / "bert_mha.onnx", "bert", use_multi_head_attention=True)
        _optimize(
            bert,
            HERE / "bert_no_embed.onnx",
            "bert",
            enable_embed_layer_norm=False,
            enable_skip_layer_norm=False,
            enable_bias_skip_layer_norm=False,
        )
        _optimize(gpt2, HERE / "gpt2_optimized.onnx", "gpt2")
        _optimize(encoder, HERE / "encoder_optimized.onnx", "bert")
        _ort_optimized(fusable, HERE / "ort_level2_fused.onnx")
    for path in sorted(HERE.glob("*.onnx")):
        model = onnx.load(str(path))
        ops = sorted({f"{n.domain or 'ai.onnx'}:{n.op_type}" for n in model.graph.node if n.domain})
        print(f"{path.name}: {path.stat().st_size} bytes; {', '.join(ops)}")


if __name__ == "__main__":
    main()
