"""The module scopes of a PyTorch export, as a tree of qualified module paths over the leaves.

A profiler names modules by their path in the model (``encoder.layer.0.mlp.0``) or by class and
instance (``nn.Module: Linear_3``); an export names them in one of two ways:

- the TorchScript exporter names each node ``/encoder/layer.0/mlp/mlp.0/MatMul``: one part per
  called module, each the tail of its qualified name from the last part that is not an index
  (``layer.0`` for ``encoder.layer.0``, whose ModuleList ``layer`` is never called; ``mlp.0``
  for ``encoder.layer.0.mlp.0``, below the called Sequential ``mlp``);
- the dynamo exporter keeps flat names and records, in each node's metadata_props, the full
  paths (``pkg.torch.onnx.name_scopes``), the module classes and, last, the ATen op that made
  the node (``pkg.torch.onnx.class_hierarchy``).

Every leaf's full scope is rebuilt from these (the hierarchy's scope groups skip scopes of a
single node, so they cannot tell it), and each scope knows its direct leaves, its child scopes
in the order of their first leaf (the order they ran in) and, from dynamo, its class. A leaf
made by dynamo also knows its ATen op and the FX node it came from (``linear_1``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from xocview.model import Graph, Hierarchy

__all__ = ["GraphScopes", "Origin", "Scope", "qualified_steps"]

_QUOTED = re.compile(r"'([^']*)'")
_TORCH_KEYS = ("pkg", "torch", "onnx")


@dataclass
class Scope:
    """One module scope: ``key`` is its qualified path ("" for the model itself)."""

    key: str
    parent: str | None
    children: list[str] = field(default_factory=list)
    leaves: list[int] = field(default_factory=list)
    cls: str = ""  # the module's class, short ("Linear"), where the export says


@dataclass(frozen=True)
class Origin:
    """The dynamo export's record of what made a leaf: the FX node and its ATen op."""

    fx_node: str  # "linear_1", unique within its scope
    aten: str  # "linear" (from "aten.linear.default")


def qualified_steps(parts: tuple[str, ...]) -> list[str]:
    """The qualified path of each scope level of a TorchScript node name's parts:
    ``("encoder", "layer.0", "mlp", "mlp.0")`` -> ``encoder``, ``encoder.layer.0``,
    ``encoder.layer.0.mlp``, ``encoder.layer.0.mlp.0``."""
    steps: list[str] = []
    path = ""
    for part in parts:
        atoms = part.split(".")
        tail = path.rsplit(".", 1)[-1]
        if path and len(atoms) > 1 and atoms[0] == tail and all(a.isdigit() for a in atoms[1:]):
            path = f"{path}.{'.'.join(atoms[1:])}"  # "mlp.0" below a called "mlp"
        else:
            path = f"{path}.{part}" if path else part
        steps.append(path)
    return steps


def _torch_props(metadata: Mapping[str, object]) -> Mapping[str, object]:
    """The node's ``pkg.torch.onnx`` metadata_props (expanded or as dotted keys)."""
    props = metadata.get("metadata_props")
    if not isinstance(props, Mapping):
        return {}
    level: object = props
    for key in _TORCH_KEYS:
        if not isinstance(level, Mapping) or key not in level:
            flat = {
                k[len("pkg.torch.onnx.") :]: v
                for k, v in props.items()
                if isinstance(k, str) and k.startswith("pkg.torch.onnx.")
            }
            return flat
        level = level[key]
    return level if isinstance(level, Mapping) else {}


class GraphScopes:
    """The scope tree of a graph's leaves (see the module's docstring)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        h = Hierarchy.of(graph)
        self.scopes: dict[str, Scope] = {"": Scope("", None)}
        self.origin: dict[int, Origin] = {}
        self.spellings: dict[str, str] = {}  # "/encoder/layer.0", "encoder.layer.0" -> key
        self.leaf_scope: dict[int, str] = {}
        self._kinds: dict[str, Counter[str]] = {}
        order = graph.index.topo_order.tolist()
        seen = set(order)
        order += [i for i in range(len(graph.nodes)) if i not in seen]  # nodes on cycles
        self.rank = {node: k for k, node in enumerate(order)}  # the order the graph runs in
        for leaf in order:
            if not h.is_group[leaf]:
                self._add_leaf(leaf)

    def _add_leaf(self, leaf: int) -> None:
        node = self.graph.nodes[leaf]
        props = _torch_props(node.metadata)
        scopes = _quoted(props.get("name_scopes"))
        classes: list[str] = []
        if len(scopes) >= 2:  # dynamo: ['', 'encoder', ..., 'linear']
            steps = [s for s in scopes[1:-1] if s]
            classes = _quoted(props.get("class_hierarchy"))
            if len(classes) != len(scopes):
                classes = []
            elif classes[-1].startswith("aten."):  # 'aten.linear.default'
                self.origin[leaf] = Origin(scopes[-1], classes[-1].split(".")[1])
        else:
            name = node.metadata.get("name")
            name = name if isinstance(name, str) and "/" in name else node.id
            parts = tuple(p for p in name.rpartition("/")[0].split("/") if p)
            steps = qualified_steps(parts)
            for k in range(len(steps)):
                self.spellings.setdefault("/" + "/".join(parts[: k + 1]), steps[k])
        parent = ""
        for step in steps:
            scope = self._scope(step, parent)
            parent = scope.key
        self.scopes[parent].leaves.append(leaf)
        self.leaf_scope[leaf] = parent
        for step, cls in zip(scopes[:-1], classes[:-1], strict=False):
            if step in self.scopes and not self.scopes[step].cls:
                self.scopes[step].cls = cls.rsplit(".", 1)[-1]

    def _scope(self, key: str, parent: str = "") -> Scope:
        scope = self.scopes.get(key)
        if scope is None:
            scope = self.scopes[key] = Scope(key, parent)
            self.scopes[parent].children.append(key)
            self.spellings.setdefault(key, key)
        return scope

    def lookup(self, name: str) -> str | None:
        """The scope a range name spells (``encoder.layer.0``, ``/encoder/layer.0``), or None."""
        key = self.spellings.get(name)
        if key is None and name.startswith("/"):
            key = self.spellings.get(".".join(p for p in name.split("/") if p))
        return key

    def kinds(self, key: str) -> Counter[str]:
        """The op types of every leaf in the scope's subtree."""
        if key in self._kinds:
            return self._kinds[key]
        out: Counter[str] = Counter()
        stack = [key]
        while stack:
            scope = self.scopes[stack.pop()]
            out.update(self.graph.nodes[i].op_type for i in scope.leaves)
            stack.extend(scope.children)
        self._kinds[key] = out
        return out

    def subtree_leaves(self, key: str) -> list[int]:
        out: list[int] = []
        stack = [key]
        while stack:
            scope = self.scopes[stack.pop()]
            out += scope.leaves
            stack.extend(reversed(scope.children))
        return sorted(out)


def _quoted(value: object) -> list[str]:
    """The strings of a Python list literal as dynamo writes it (``"['', 'encoder']"``)."""
    return _QUOTED.findall(value) if isinstance(value, str) else []
