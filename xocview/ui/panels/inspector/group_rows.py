"""The inspector's rows for a group: what crosses its border, its operators, parameters, FLOPs.

A scope or a function call has no inputs or outputs of its own (``Inputs 0 / Outputs 0``,
before): its tensors are those its members read from outside and make for the outside, listed
here like a node's, with shapes and dtypes. An If or Loop keeps its own inputs and outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtWidgets import QTreeWidgetItem

from xocview.model.analyses import opfacts
from xocview.model.group_facts import OpMix, border, group_flops, group_parameters, inside
from xocview.ui.document import Document
from xocview.ui.panels.inspector.cells import Cells

__all__ = ["GROUP_ROWS", "group_rows"]

GROUP_ROWS = 200  # tensors and operators listed at most per row; a "more" row says the rest

_TensorRow = Callable[[Cells, QTreeWidgetItem, Document, int], None]


def group_rows(cells: Cells, doc: Document, i: int, tensor_row: _TensorRow, own_io: bool) -> None:
    """Rows of group ``i``: border tensors (unless it has ``own_io``: then the node's rows
    list them), the op mix, parameters and FLOPs of everything below it."""
    g, h, t = doc.graph, doc.hierarchy, cells.tree
    gid = g.nodes[i].id

    def facts() -> tuple[np.ndarray, np.ndarray, int, tuple[int, int, bool]]:
        mask = inside(h, i)
        crossing = border(g, mask)
        flops = group_flops(g, mask, h)
        return crossing.inputs, crossing.outputs, group_parameters(g, mask), flops

    ins, outs, params, (flops, unknown, assumed) = doc.derived(f"group:{gid}", facts)
    if not own_io:
        for name, tensors in (("Inputs", ins), ("Outputs", outs)):
            row = cells.row(t, name, str(len(tensors)))
            row.setToolTip(0, f"tensors that cross the group's border ({name.lower()})")
            for k in tensors[:GROUP_ROWS].tolist():
                tensor_row(cells, row, doc, k)
            _more(cells, row, len(tensors))
    mix = OpMix.of_graph(g).of(i)
    ops = cells.row(t, "Operators", f"{sum(n for _, n in mix)} ({len(mix)} types)")
    for op, n in mix[:GROUP_ROWS]:
        cells.row(ops, op, n)
    _more(cells, ops, len(mix))
    cells.row(t, "Group", f"{int(h.child_count[i])} children")
    cells.row(t, "FLOPs", opfacts.flops_text(flops, assumed, unknown))
    cells.row(t, "Parameters", f"{params:,}")


def _more(cells: Cells, row: QTreeWidgetItem, count: int) -> None:
    if count > GROUP_ROWS:
        cells.row(row, f"... {count - GROUP_ROWS:,} more", "")
