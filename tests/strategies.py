"""Hypothesis strategies for valid graphs of the shared model."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from xocview.model import DTYPES, TENSOR_KINDS, Graph, Node, Tensor

# Text that can be written as UTF-8 (no lone surrogates).
text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
ids = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=10)
# Dotted keys are expanded on load, so generated models use plain keys.
keys = text.filter(lambda k: "." not in k)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False),
    text,
)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)),
    max_leaves=10,
)
metadata = st.dictionaries(keys, json_values, max_size=4)


@st.composite
def graphs(draw: st.DrawFn, max_tensors: int = 12, max_nodes: int = 8) -> Graph:
    """A graph that is valid XOC JSON structurally (indices in range, ids unique)."""
    tensor_ids = draw(st.lists(ids, max_size=max_tensors, unique=True))
    tensors = [
        Tensor(
            tid,
            draw(st.sampled_from(TENSOR_KINDS)),
            draw(st.lists(st.integers(min_value=-1, max_value=4096), max_size=5)),
            draw(st.sampled_from(sorted(DTYPES))),
            draw(metadata),
        )
        for tid in tensor_ids
    ]
    refs = (
        st.lists(st.integers(min_value=0, max_value=len(tensors) - 1), max_size=4)
        if tensors
        else st.just([])
    )
    node_ids = draw(st.lists(ids, max_size=max_nodes, unique=True))
    nodes = [
        Node(
            nid,
            draw(ids),
            draw(refs),
            draw(refs),
            draw(st.dictionaries(keys, json_values, max_size=3)),
            draw(metadata),
        )
        for nid in node_ids
    ]
    return Graph(draw(text), draw(text), tensors, nodes, draw(refs), draw(refs), draw(metadata))
