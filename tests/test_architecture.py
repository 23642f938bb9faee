"""The package's shape: no import cycles between xocview's modules.

import-linter's contracts keep the layers apart (pyproject.toml); this test forbids the other
tangle, two modules that need each other, which layers do not catch inside one package.
Imports made only for type checking are left out: they never run.
"""

from __future__ import annotations

import grimp
import networkx as nx


def _import_graph() -> nx.DiGraph:
    graph = grimp.build_graph("xocview", exclude_type_checking_imports=True)
    out = nx.DiGraph()
    for module in graph.modules:
        out.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith("xocview"):
                out.add_edge(module, imported)
    return out


def test_no_two_modules_import_each_other_directly_or_round_a_loop() -> None:
    g = _import_graph()
    loops = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not loops, "import cycles: " + "; ".join(" <-> ".join(c) for c in loops)


def test_the_import_graph_is_the_real_one() -> None:
    """A check that cannot fail is no check: the graph has the edges we know of."""
    g = _import_graph()
    assert g.has_edge("xocview.model.index", "xocview.model.graph")
    assert not g.has_edge("xocview.model.graph", "xocview.model.index")
    assert len(g) > 100
