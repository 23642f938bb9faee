"""The module calls of a PyTorch profile, matched to the scopes of the exported graph.

In eager mode the profiler marks each module's forward with a ``python_function`` range named
``nn.Module: <Class>_<k>`` (``with_stack=True``; the k-th instance of that class it met), which
names no path. A ``record_function`` range (``user_annotation``) may name one
(``encoder.layer.0.attention``, ``/encoder/layer.0/attention``): such a range is matched to the
scope it spells. The others are matched by structure: the model's instance is the graph's root,
and under a matched instance its child instances (in the order of their first call) are aligned
with the scope's child scopes (in the order of their first node) by dynamic programming, a pair
scoring how alike the ONNX op types of the instance's ops and of the scope's nodes are, and
pairing only where the export's class (dynamo) agrees. Instances that make no node (a Dropout
in eval mode) are left unmatched; their ops count in the enclosing instance's scope.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from xocview.formats.profiles.graph_scopes import GraphScopes
from xocview.formats.profiles.trace_events import Span

__all__ = ["MODULE_PREFIX", "Label", "ModuleTree"]

MODULE_PREFIX = "nn.Module: "
_INSTANCE = re.compile(r"^(.*)_\d+$")
_RANGE_CATS = ("user_annotation", "gpu_user_annotation")
_ORDER_BONUS = 0.01  # a pair of two instances/scopes that nothing tells apart still pairs


@dataclass
class Label:
    """A module instance (``Linear_3``) or a named range, and what is known of its calls."""

    name: str
    cls: str
    parent: str | None
    first: int  # the span of its first call
    children: list[str] = field(default_factory=list)
    calls: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    scope: str | None = None


class ModuleTree:
    """Context spans (module calls and ranges that name a scope), the label of each, and for
    each span the context span that encloses it (``ctx``)."""

    def __init__(self, spans: Sequence[Span], scopes: GraphScopes) -> None:
        self.spans, self.scopes = spans, scopes
        self.labels: dict[str, Label] = {}
        self.label_of: dict[int, str] = {}
        self.ranges = 0  # ranges that name no scope (ProfilerStep#1...): passed through
        self.ctx = [-1] * len(spans)
        for i, span in enumerate(spans):  # parents come before their children
            p = span.parent
            self.ctx[i] = -1 if p < 0 else (p if p in self.label_of else self.ctx[p])
            self._context(i, span)

    def _context(self, i: int, span: Span) -> None:
        if span.cat == "python_function" and span.name.startswith(MODULE_PREFIX):
            name = span.name[len(MODULE_PREFIX) :]
            m = _INSTANCE.match(name)
            cls = m.group(1) if m else name
        elif span.cat in _RANGE_CATS:
            if self.scopes.lookup(span.name) is None:
                self.ranges += 1
                return
            name, cls = span.name, ""
        else:
            return
        self.label_of[i] = name
        label = self.labels.get(name)
        if label is None:
            up = self.ctx[i]
            parent = self.label_of[up] if up >= 0 else None
            label = self.labels[name] = Label(name, cls, parent, i)
            if parent is not None and name not in self.labels[parent].children:
                self.labels[parent].children.append(name)
        label.calls += 1

    def add_kinds(self, span: int, kinds: Sequence[str]) -> None:
        """Count the ONNX op types an op span becomes in every label it ran under in that
        label's first call (the signature the alignment compares)."""
        c = self.ctx[span]
        while c >= 0:
            label = self.labels[self.label_of[c]]
            if label.first == c:
                label.kinds.update(kinds)
            c = self.ctx[c]

    def roots(self) -> list[str]:
        return [name for name, label in self.labels.items() if label.parent is None]

    def align(self) -> None:
        """Give each label the scope it stands for (``Label.scope``), where one is found."""
        for label in self.labels.values():
            key = self.scopes.lookup(label.name)
            if key is not None:
                label.scope = key
        roots = self.roots()
        if len(roots) == 1 and self.labels[roots[0]].scope is None:
            self.labels[roots[0]].scope = ""  # the model itself
            self._align(roots[0], "")
        else:
            self._pair([r for r in roots if self.labels[r].scope is None], "")
            for name in roots:
                self._descend(name)

    def _descend(self, name: str) -> None:
        label = self.labels[name]
        if label.scope is not None:
            self._align(name, label.scope)
        else:
            for child in label.children:
                self._descend(child)

    def _align(self, name: str, key: str) -> None:
        label = self.labels[name]
        self._pair([c for c in label.children if self.labels[c].scope is None], key)
        for child in label.children:
            self._descend(child)

    def _pair(self, names: list[str], key: str) -> None:
        """Align the labels ``names`` with the child scopes of ``key`` not yet taken."""
        taken = {lb.scope for lb in self.labels.values() if lb.scope is not None}
        scopes = [s for s in self.scopes.scopes[key].children if s not in taken]
        for a, b in _alignment(names, scopes, self._score):
            self.labels[names[a]].scope = scopes[b]

    def _score(self, name: str, key: str) -> float:
        label, scope = self.labels[name], self.scopes.scopes[key]
        if scope.cls and label.cls and scope.cls != label.cls:
            return 0.0
        theirs = self.scopes.kinds(key)
        common = sum((label.kinds & theirs).values())
        size = max(sum(label.kinds.values()), sum(theirs.values()), 1)
        bonus = 1.0 if scope.cls and scope.cls == label.cls else 0.0
        return common / size + bonus + _ORDER_BONUS

    def scope_of(self, span: int) -> tuple[str, int] | None:
        """The scope of the innermost matched context enclosing ``span``, and that context
        span (one call: the unit of claiming nodes); None outside every matched context."""
        c = self.ctx[span]
        while c >= 0:
            scope = self.labels[self.label_of[c]].scope
            if scope is not None:
                return scope, c
            c = self.ctx[c]
        return None


def _alignment(
    left: Sequence[str], right: Sequence[str], score: Callable[[str, str], float]
) -> list[tuple[int, int]]:
    """Pairs (i, j), in order on both sides, maximising the summed ``score(left[i],
    right[j])`` (pairs scoring 0 are never made)."""
    n, m = len(left), len(right)
    if not n or not m:
        return []
    s = [[score(a, b) for b in right] for a in left]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            pair = s[i][j] + best[i + 1][j + 1] if s[i][j] > 0 else 0.0
            best[i][j] = max(pair, best[i + 1][j], best[i][j + 1])
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if s[i][j] > 0 and best[i][j] == s[i][j] + best[i + 1][j + 1]:
            out.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return out
