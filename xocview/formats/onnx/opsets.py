"""The opsets an ONNX file written from a graph imports, and whether its operators fit them.

A graph read from ONNX keeps its ``opset_import``. A graph from another format (XOC, NNVM,
LightNet JSON) has none: its ops were mapped onto ONNX operator names with the attributes of
some version (LightNet's Reshape keeps Reshape-1's ``shape``), so the default domain gets the
newest opset up to ``PREFERRED_OPSET`` in which every node's op exists with its attributes and
input count. An op without an ONNX operator is a FormatError naming the node.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import onnx

from xocview.errors import FormatError, shorten
from xocview.formats.onnx.attr_protos import schema_of
from xocview.model import Graph, Node
from xocview.model.dtypes import dtype_by_onnx_code
from xocview.model.schema import schema_attributes

__all__ = [
    "MAX_OPSET_VERSION",
    "ONNX_DOMAINS",
    "PREFERRED_OPSET",
    "ir_version",
    "misfit",
    "model_opsets",
    "opset_domain",
]

# The newest default-domain opset chosen for graphs that name none: one that onnxruntime
# releases of the last years all run.
PREFERRED_OPSET = 21
# The versions onnx's schema lookup takes (a C++ int).
MAX_OPSET_VERSION = 2**31 - 1
# Domains whose operators ONNX's schemas define ("" is the default, also spelt "ai.onnx").
ONNX_DOMAINS = frozenset(
    {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"}
)

Signature = tuple[str, str, frozenset[str], int, int]  # domain, op, attributes, inputs, outputs


def opset_domain(domain: str) -> str:
    """The domain as an opset_import entry writes it ("" for ONNX's default)."""
    return "" if domain == "ai.onnx" else domain


def node_domain(node: Node) -> str:
    domain = node.metadata.get("domain", "")
    return opset_domain(domain) if isinstance(domain, str) else ""


def signature(node: Node) -> Signature:
    """What decides whether a node fits an opset: its op, attribute names and arity."""
    omitted_in = node.metadata.get("omitted_inputs")
    omitted_out = node.metadata.get("omitted_outputs")
    n_in = len(node.inputs) + (len(omitted_in) if isinstance(omitted_in, list) else 0)
    n_out = len(node.outputs) + (len(omitted_out) if isinstance(omitted_out, list) else 0)
    attrs = frozenset(k for k, v in node.attributes.items() if v is not None)
    return node_domain(node), node.op_type, attrs, n_in, n_out


def misfit(sig: Signature, version: int) -> str | None:
    """Why a node of this signature is not a valid operator at opset ``version`` of its
    domain, or None when it is."""
    domain, op, attrs, n_in, n_out = sig
    schema = schema_of(op, version, domain)
    if schema is None:
        if schema_attributes(op) is None:
            return f"op '{op}' is not an ONNX operator"
        return f"ONNX defines no {op} up to opset {version}"
    name = f"{op}-{schema.since_version}"
    if schema.deprecated:
        return f"{name} is deprecated in opset {version}"
    unknown = sorted(attrs - set(schema.attributes))
    if unknown:
        return f"{name} has no attribute '{unknown[0]}'"
    if not schema.min_input <= n_in <= schema.max_input:
        return f"{name} takes {_span(schema.min_input, schema.max_input)} inputs, not {n_in}"
    if not schema.min_output <= n_out <= schema.max_output:
        return f"{name} makes {_span(schema.min_output, schema.max_output)} outputs, not {n_out}"
    return None


def _span(low: int, high: int) -> str:
    return str(low) if low == high else f"{low} to {high}" if high < 1 << 20 else f"{low} or more"


def model_opsets(graph: Graph, operators: Iterable[Node], file: str) -> dict[str, int]:
    """Domain ("" for the default) -> opset version for the file, the graph's own where it
    names them; ``operators`` are the nodes written as operators (not function calls).

    Raises FormatError naming the first node whose op does not fit the opset: an op that is
    no ONNX operator, an attribute or an input count its schema does not have, an element
    type code that is none; and naming the entry of an opset version out of range.
    """
    opsets = _given_opsets(graph, file)
    by_domain: dict[str, dict[Signature, Node]] = {}
    for node in operators:
        sig = signature(node)
        by_domain.setdefault(sig[0], {}).setdefault(sig, node)
        if sig[0] in ONNX_DOMAINS:
            _check_dtype_codes(node, file)
    for domain, sigs in by_domain.items():
        if domain not in opsets:
            opsets[domain] = _fitting(sigs, domain) if domain in ONNX_DOMAINS else 1
        if domain in ONNX_DOMAINS:
            for sig, node in sigs.items():
                why = misfit(sig, opsets[domain])
                if why is not None:
                    known = schema_attributes(node.op_type) is not None
                    raise FormatError(
                        file,
                        f"node '{node.id}'",
                        why,
                        f"an ONNX operator{f' of opset {opsets[domain]}' if known else ''} "
                        "(ONNX output needs every op to be one: replace or delete the node)",
                    )
    return opsets


def _given_opsets(graph: Graph, file: str) -> dict[str, int]:
    """The graph's own opset imports (from its source); FormatError for a version that no
    opset has (onnx takes 1 to 2^31 - 1; a larger one would fail inside its schema lookup)."""
    opsets: dict[str, int] = {}
    entries = graph.metadata.get("opset_import", ()) or ()
    for k, entry in enumerate(entries if isinstance(entries, list) else ()):
        if isinstance(entry, dict):
            domain, version = entry.get("domain"), entry.get("version")
            if isinstance(domain, str) and isinstance(version, int):
                if not 1 <= version <= MAX_OPSET_VERSION:
                    raise FormatError(
                        file,
                        f"graph metadata 'opset_import'[{k}]",
                        f"version {shorten(str(version), 40)} of domain "
                        f"'{shorten(domain or 'ai.onnx')}' is out of range",
                        f"an opset version from 1 to {MAX_OPSET_VERSION} (e.g. {PREFERRED_OPSET})",
                    )
                opsets.setdefault(opset_domain(domain), version)
    return opsets


# Attributes of ONNX operators that hold an element type code (Cast's 'to', EyeLike's and
# the Random ops' 'dtype', QuantizeLinear's 'output_dtype'), and whether 0 (unset) may be one.
_DTYPE_ATTRIBUTES = {"to": False, "dtype": False, "output_dtype": True}


def _check_dtype_codes(node: Node, file: str) -> None:
    """FormatError naming the node when an element type attribute holds no type's code (onnx's
    checker stops on it with a message that names no node)."""
    for name, zero_ok in _DTYPE_ATTRIBUTES.items():
        code = node.attributes.get(name)
        if not isinstance(code, int) or isinstance(code, bool) or (zero_ok and code == 0):
            continue
        if code == 0 or dtype_by_onnx_code(code) is None or not _onnx_knows(code):
            raise FormatError(
                file,
                f"node '{node.id}'",
                f"attribute '{name}' is {shorten(str(code), 40)}, which is no element type",
                "an ONNX TensorProto.DataType code, e.g. 1 (float32) or 7 (int64)",
            )


def _onnx_knows(code: int) -> bool:
    return code in onnx.TensorProto.DataType.values()


def _fitting(sigs: dict[Signature, Node], domain: str) -> int:
    """The newest version (up to the preferred one) that every signature fits; else the one
    most of them fit, for the caller to report the first that does not."""
    top = min(PREFERRED_OPSET, _newest(domain)) if domain == "" else _newest(domain)
    best, best_count = top, -1
    for version in range(top, 0, -1):
        count = sum(misfit(sig, version) is None for sig in sigs)
        if count == len(sigs):
            return version
        if count > best_count:
            best, best_count = version, count
    return best


@lru_cache(maxsize=8)
def _newest(domain: str) -> int:
    versions = [
        s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.domain == domain
    ]
    return max(versions, default=1)


def ir_version(graph: Graph, opsets: dict[str, int], file: str = "") -> int:
    """The graph's own IR version, else the lowest that its opsets need. FormatError for one
    newer than this onnx writes (its checker would refuse it; past 2^63 protobuf would)."""
    version = graph.metadata.get("ir_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > 0:
        if version > onnx.IR_VERSION:
            raise FormatError(
                file,
                "graph metadata 'ir_version'",
                f"IR version {shorten(str(version), 40)} is newer than this ONNX writes",
                f"an IR version up to {onnx.IR_VERSION}, or none (the lowest the opsets need)",
            )
        return version
    ids = [onnx.helper.make_opsetid(d, v) for d, v in opsets.items() if d in ONNX_DOMAINS]
    return max(onnx.helper.find_min_ir_version_for(ids, ignore_unknown=True), 3)
