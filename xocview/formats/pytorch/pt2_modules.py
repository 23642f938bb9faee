"""The module tree of an exported program, from each node's ``nn_module_stack``.

torch records, for every node, the modules that were being called when it was traced, outermost
first, as ``key,path,class`` entries joined by ``;`` (``L__self___fc,fc,torch.nn.Linear``). Each
call of a module (its key) becomes a group node, nested as the stack nests them, so the tree
is the one a torch.onnx export records as name scopes. The root module (empty path) is the
whole graph and gets no group.
"""

from __future__ import annotations

from typing import Any

from xocview.model import Node

__all__ = ["ModuleTree", "module_stack"]


def module_stack(text: str) -> list[tuple[str, str, str]]:
    """The (key, path, class) entries of a serialized nn_module_stack; entries that do not
    have three parts are skipped."""
    out: list[tuple[str, str, str]] = []
    for item in text.split(";"):
        parts = _split(item)
        if len(parts) == 3:
            out.append((parts[0], parts[1], parts[2]))
    return out


def _split(item: str) -> list[str]:
    """Split at commas outside brackets (a key may hold ``L['self'].layers[0]``)."""
    parts: list[str] = []
    depth, start = 0, 0
    for k, c in enumerate(item):
        if c in "[(":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(item[start:k])
            start = k + 1
    parts.append(item[start:])
    return parts


class ModuleTree:
    """Group nodes for module calls, made as nodes name their stacks."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.by_keys: dict[tuple[str, ...], str] = {}
        self.children: dict[str, list[str]] = {}
        self.groups: list[Node] = []
        self.root_class: str | None = None

    def parent_of(self, stack: list[tuple[str, str, str]]) -> str | None:
        """The innermost group of a node's stack, making the groups it needs."""
        parent: str | None = None
        parent_path = ""
        keys: tuple[str, ...] = ()
        for key, path, cls in stack:
            if not path:  # the root module: the graph itself
                self.root_class = self.root_class or cls
                continue
            keys = (*keys, key)
            gid = self.by_keys.get(keys)
            if gid is None:
                gid = self._group(keys, path, cls, parent, parent_path)
            parent, parent_path = gid, path
        return parent

    def adopt(self, parent: str, child: str) -> None:
        self.children[parent].append(child)

    def _group(
        self, keys: tuple[str, ...], path: str, cls: str, parent: str | None, parent_path: str
    ) -> str:
        name = (
            path[len(parent_path) + 1 :]
            if parent_path and path.startswith(parent_path + ".")
            else path
        )
        base = _scope_id(parent, name)
        gid, n = base, 1
        while gid in self.taken:
            n += 1
            gid = f"{base}@{n - 1}"
        self.taken.add(gid)
        self.by_keys[keys] = gid
        self.children[gid] = []
        # "derived": the exporter's record of module calls, as an ONNX export's scoped names
        # are; loose ops beside these groups (a causal mask) then gather into clusters.
        metadata: dict[str, Any] = {"name": name, "module": path, "class": cls, "derived": "scope"}
        if parent is not None:
            metadata["parent_id"] = parent
            self.children[parent].append(gid)
        op_type = cls.rpartition(".")[2] or "Module"
        self.groups.append(Node(gid, op_type, [], [], {}, metadata))
        return gid

    def finish(self) -> list[Node]:
        """The group nodes, each with its children's ids."""
        for g in self.groups:
            g.metadata["children_ids"] = self.children[g.id]
        return self.groups


def _scope_id(parent: str | None, name: str) -> str:
    part = name.replace("/", "_")
    return f"{parent}/{part}" if parent else f"/{part}"
