"""Writes the hand-made sample graphs of this folder (run from the repository root).

The JSON files are committed; this script documents how they were made and remakes them after
a deliberate change: `python sample_graphs/generate.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xocview.formats.xoc import save
from xocview.model import Graph, Node, Tensor

HERE = Path(__file__).resolve().parent


class Builder:
    """Adds tensors and nodes by id, so that indices stay right while the graph is written."""

    def __init__(self, gid: str, name: str, metadata: dict[str, Any] | None = None) -> None:
        self.g = Graph(gid, name, metadata=metadata or {})
        self.pos: dict[str, int] = {}

    def t(
        self, tid: str, kind: str, shape: list[int], dtype: str = "float32", **metadata: Any
    ) -> str:
        self.pos[tid] = len(self.g.tensors)
        self.g.tensors.append(Tensor(tid, kind, shape, dtype, dict(metadata)))
        if kind == "input":
            self.g.inputs.append(self.pos[tid])
        elif kind == "output":
            self.g.outputs.append(self.pos[tid])
        return tid

    def n(
        self,
        nid: str,
        op: str,
        ins: list[str],
        outs: list[str],
        attrs: dict[str, Any] | None = None,
        **metadata: Any,
    ) -> str:
        node = Node(
            nid,
            op,
            [self.pos[i] for i in ins],
            [self.pos[o] for o in outs],
            attrs or {},
            dict(metadata),
        )
        self.g.nodes.append(node)
        return nid

    def group(
        self,
        gid: str,
        kind: str,
        children: list[str],
        level: int,
        parent: str | None = None,
        **metadata: Any,
    ) -> str:
        md: dict[str, Any] = {"level": level, "children_ids": children}
        if parent:
            md["parent_id"] = parent
        md.update(metadata)
        self.g.nodes.append(Node(gid, kind, [], [], {}, md))
        by_id = {nd.id: nd for nd in self.g.nodes}
        for child in children:
            if child in by_id:
                by_id[child].metadata["parent_id"] = gid
                by_id[child].metadata["level"] = level + 1
        return gid


def simple_model() -> Graph:
    """The example of the XOC JSON specification, as written there."""
    b = Builder("simple_model", "simple_model")
    b.t("tensor_0", "input", [1, 3, 224, 224])
    b.t("tensor_1", "weight", [64, 3, 3, 3])
    b.t("tensor_2", "activation", [1, 64, 224, 224])
    b.g.outputs.append(2)
    b.n(
        "node_0",
        "Conv",
        ["tensor_0", "tensor_1"],
        ["tensor_2"],
        {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1]},
    )
    return b.g


def tiny_transformer() -> Graph:
    """Two encoder layers, grouped encoder > layer > attention/mlp: a hierarchy 3 levels deep."""
    seq, dim, vocab = 16, 64, 1000
    b = Builder(
        "tiny_transformer",
        "tiny transformer encoder",
        {
            "producer": {"name": "xocview sample_graphs/generate.py", "version": "1"},
            "description": "A two-layer transformer encoder with a hierarchy of groups",
            "training": {"dataset": "none", "hyper": {"lr": 0.001, "batch": 32}},
        },
    )
    b.t("input_ids", "input", [1, seq], "int64", doc="token ids")
    b.t("attention_mask", "input", [1, seq], "int64")
    b.t("embed.weight", "weight", [vocab, dim])
    b.t("pos.weight", "weight", [seq, dim])
    b.t("mask.scale", "weight", [], source={"constant": -10000.0})
    b.t("x_tok", "activation", [1, seq, dim])
    b.t("x0", "activation", [1, seq, dim])
    b.t("mask_f", "activation", [1, seq])
    b.t("mask_bias", "activation", [1, seq])
    b.n(
        "embed",
        "Gather",
        ["embed.weight", "input_ids"],
        ["x_tok"],
        {"axis": 0},
        performance={"time": {"cpu": 0.041}},
    )
    b.n("add_pos", "Add", ["x_tok", "pos.weight"], ["x0"], performance={"time": {"cpu": 0.012}})
    b.n("mask_cast", "Cast", ["attention_mask"], ["mask_f"], {"to": 1})
    b.n("mask_bias", "Mul", ["mask_f", "mask.scale"], ["mask_bias"])
    b.t("scale", "weight", [], source={"constant": 8.0})
    x = "x0"
    layers = []
    for i in range(2):
        p = f"l{i}."
        w = {
            k: b.t(f"layer{i}.{k}", "weight", s)
            for k, s in (
                ("wq", [dim, dim]),
                ("wk", [dim, dim]),
                ("wv", [dim, dim]),
                ("wo", [dim, dim]),
                ("ln.gamma", [dim]),
                ("ln.beta", [dim]),
                ("w1", [dim, 4 * dim]),
                ("w2", [4 * dim, dim]),
            )
        }
        a = {
            k: b.t(p + k, "activation", s)
            for k, s in (
                ("q", [1, seq, dim]),
                ("k", [1, seq, dim]),
                ("v", [1, seq, dim]),
                ("kt", [1, dim, seq]),
                ("s", [1, seq, seq]),
                ("s2", [1, seq, seq]),
                ("s3", [1, seq, seq]),
                ("p", [1, seq, seq]),
                ("c", [1, seq, dim]),
                ("o", [1, seq, dim]),
                ("r", [1, seq, dim]),
                ("n", [1, seq, dim]),
                ("h", [1, seq, 4 * dim]),
                ("g", [1, seq, 4 * dim]),
                ("f", [1, seq, dim]),
            )
        }
        out = b.t(f"hidden_{i}", "output" if i == 1 else "activation", [1, seq, dim])
        cpu = 0.05 + 0.01 * i
        attn = [
            b.n(p + "q", "MatMul", [x, w["wq"]], [a["q"]], performance={"time": {"cpu": cpu}}),
            b.n(p + "k", "MatMul", [x, w["wk"]], [a["k"]], performance={"time": {"cpu": cpu}}),
            b.n(p + "v", "MatMul", [x, w["wv"]], [a["v"]], performance={"time": {"cpu": cpu}}),
            b.n(p + "kt", "Transpose", [a["k"]], [a["kt"]], {"perm": [0, 2, 1]}),
            b.n(p + "scores", "MatMul", [a["q"], a["kt"]], [a["s"]]),
            b.n(p + "scale", "Div", [a["s"], "scale"], [a["s2"]]),
            b.n(p + "mask", "Add", [a["s2"], "mask_bias"], [a["s3"]]),
            b.n(
                p + "softmax",
                "Softmax",
                [a["s3"]],
                [a["p"]],
                {"axis": -1},
                performance={"time": {"cpu": 0.02}},
            ),
            b.n(p + "context", "MatMul", [a["p"], a["v"]], [a["c"]]),
            b.n(
                p + "proj",
                "MatMul",
                [a["c"], w["wo"]],
                [a["o"]],
                source={"module": f"encoder.layer.{i}.attention.output.dense"},
            ),
        ]
        res = [
            b.n(p + "residual", "Add", [x, a["o"]], [a["r"]]),
            b.n(
                p + "norm",
                "LayerNormalization",
                [a["r"], w["ln.gamma"], w["ln.beta"]],
                [a["n"]],
                {"axis": -1, "epsilon": 1e-05},
            ),
        ]
        mlp = [
            b.n(
                p + "fc1",
                "MatMul",
                [a["n"], w["w1"]],
                [a["h"]],
                performance={"time": {"cpu": 0.11}},
            ),
            b.n(p + "gelu", "Gelu", [a["h"]], [a["g"]], {"approximate": "tanh"}),
            b.n(
                p + "fc2", "MatMul", [a["g"], w["w2"]], [a["f"]], performance={"time": {"cpu": 0.1}}
            ),
        ]
        tail = b.n(p + "out", "Add", [a["n"], a["f"]], [out])
        ga = b.group(p + "attention", "Attention", attn, 2, kind_hint="self-attention")
        gm = b.group(p + "mlp", "MLP", mlp, 2)
        layers.append(b.group(f"layer{i}", "TransformerLayer", [ga, *res, gm, tail], 1))
        x = out
    b.group("encoder", "Encoder", layers, 0, description="stack of 2 layers")
    b.t("head.weight", "weight", [dim, vocab])
    b.t("logits", "output", [1, seq, vocab])
    b.n("head", "MatMul", [x, "head.weight"], ["logits"], performance={"time": {"cpu": 0.3}})
    # Groups list their children before being listed themselves; move groups to the front so
    # that the file reads top-down.
    b.g.nodes.sort(key=lambda nd: "children_ids" not in nd.metadata)
    return b.g


def all_dtypes() -> Graph:
    """Every dtype of the spec (and one ONNX type beyond it), two inputs, four outputs."""
    b = Builder("all_dtypes", "all dtypes")
    b.t("image", "input", [1, 3, 8, 8], "uint8")
    b.t("labels", "input", [4], "string", symbols="class names")
    b.t("x_f32", "activation", [1, 3, 8, 8], "float32")
    b.t("x_f16", "output", [1, 3, 8, 8], "float16")
    b.t("x_i32", "activation", [1, 3, 8, 8], "int32")
    b.t("x_i64", "activation", [1, 3, 8, 8], "int64")
    b.t("threshold", "weight", [], "int64")
    b.t("bright", "output", [1, 3, 8, 8], "bool")
    b.t("x_f64", "output", [1, 3, 8, 8], "double")
    b.t("labels_out", "output", [4], "string")
    b.n("to_float", "Cast", ["image"], ["x_f32"], {"to": 1})
    b.n("to_half", "Cast", ["x_f32"], ["x_f16"], {"to": 10})
    b.n("to_int32", "Cast", ["x_f16"], ["x_i32"], {"to": 6})
    b.n("to_int64", "Cast", ["x_i32"], ["x_i64"], {"to": 7})
    b.n("is_bright", "Greater", ["x_i64", "threshold"], ["bright"])
    b.n("to_double", "Cast", ["x_f32"], ["x_f64"], {"to": 11})
    b.n("pass_labels", "Identity", ["labels"], ["labels_out"])
    return b.g


def five_faults() -> dict[str, Any]:
    """A file with five different faults for `xocview check` (written as raw JSON)."""
    return {
        "id": "five_faults",
        "name": "five faults",
        "tensors": [
            {"id": "x", "name": "input", "shape": [1, 4], "dtype": "float32"},
            {"id": "a", "name": "activation", "shape": [1, 4], "dtype": "float32"},
            {"id": "b", "name": "activation", "shape": [1, 4], "dtype": "float32"},
            {"id": "a", "name": "activation", "shape": [1, 4], "dtype": "float32"},
            {"id": "y", "name": "output", "shape": [1, 4], "dtype": "float32"},
        ],
        "nodes": [
            {"id": "relu", "name": "Relu", "inputs": [0, 9], "outputs": [1], "attributes": {}},
            {"id": "loop_a", "name": "Add", "inputs": [1, 2], "outputs": [3], "attributes": {}},
            {"id": "loop_b", "name": "Neg", "inputs": [3], "outputs": [2], "attributes": {}},
            {"id": "twice", "name": "Sigmoid", "inputs": [2], "outputs": [3], "attributes": {}},
            {
                "id": "tail",
                "name": "Identity",
                "inputs": [3],
                "outputs": [4],
                "attributes": {},
                "metadata": {"parent_id": "loop_b"},
            },
        ],
        "inputs": [0],
        "outputs": [4],
        "metadata": {},
    }


def main() -> None:
    save(simple_model(), HERE / "simple_model.json")
    save(tiny_transformer(), HERE / "tiny_transformer.json")
    save(all_dtypes(), HERE / "all_dtypes.json")
    (HERE / "broken" / "five_faults.json").write_text(
        json.dumps(five_faults(), indent=2) + "\n", encoding="utf-8"
    )
    (HERE / "broken" / "truncated.json").write_text(
        (HERE / "simple_model.json").read_text(encoding="utf-8")[:300], encoding="utf-8"
    )
    (HERE / "broken" / "not_a_graph.json").write_text(
        json.dumps({"name": "settings", "theme": "dark"}, indent=2) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
