"""Edited copies of ONNX models for the diff tests: a node bypassed, an attribute changed and a
tensor renamed, made on the ModelProto with onnx's helpers so that both sides are real files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import onnx
from onnx import helper

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(LIGHT.glob("light_*.onnx"))

# model -> (op of the node to bypass, op and float attribute to change)
EDITS = {
    "bvlc_alexnet": ("Dropout", "LRN", "alpha"),
    "inception_v1": ("Dropout", "LRN", "alpha"),
    "zfnet512": ("Relu", "LRN", "beta"),
    "vgg19": ("Relu", "Dropout", "ratio"),
    "squeezenet": ("Relu", "Dropout", "ratio"),
    "resnet50": ("Relu", "BatchNormalization", "epsilon"),
    "inception_v2": ("Relu", "BatchNormalization", "epsilon"),
    "densenet121": ("Relu", "BatchNormalization", "epsilon"),
}


@dataclass(frozen=True)
class Edits:
    """What ``edited_copy`` did, named by tensors (unnamed ONNX nodes get ids from the loader)."""

    bypassed_output: str  # the bypassed node's output; its readers now read its input
    changed_output: str  # the output of the node whose attribute changed
    attribute: str
    old_value: float
    new_value: float
    renamed: tuple[str, str]


def light(name: str) -> Path:
    return LIGHT / f"light_{name}.onnx"


def edited_copy(src: Path, dst: Path, bypass: str, attr_op: str, attr: str) -> Edits:
    """``src`` with the first ``bypass`` node between two others bypassed, ``attr`` of the last
    ``attr_op`` node doubled, and an activation in the middle renamed; saved to ``dst``."""
    model = onnx.load(str(src))
    g = model.graph
    ends = {v.name for v in g.output} | {v.name for v in g.input}
    made = {out for n in g.node for out in n.output}
    k = next(
        i
        for i, n in enumerate(g.node)
        if n.op_type == bypass and n.input[0] in made and n.output[0] not in ends
    )
    gone = g.node[k]
    x, y = gone.input[0], gone.output[0]
    del g.node[k]
    _rename_reads(g, y, x)
    target = [n for n in g.node if n.op_type == attr_op][-1]
    value = next(a for a in target.attribute if a.name == attr)
    old_value = helper.get_attribute_value(value)
    value.f = old_value * 2
    middle = next(
        n
        for n in g.node[len(g.node) // 2 :]
        if n.output and n.output[0] not in ends and n.output[0] not in (x, target.output[0])
    )
    old_name = middle.output[0]
    new_name = old_name + "_renamed"
    middle.output[0] = new_name
    _rename_reads(g, old_name, new_name)
    for vi in g.value_info:
        if vi.name == old_name:
            vi.name = new_name
    onnx.save(model, str(dst))
    return Edits(y, target.output[0], attr, old_value, value.f, (old_name, new_name))


def _rename_reads(g: onnx.GraphProto, old: str, new: str) -> None:
    for n in g.node:
        for i, name in enumerate(n.input):
            if name == old:
                n.input[i] = new
