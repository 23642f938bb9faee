"""``xocview check`` on ONNX: every fault ``onnx.checker.check_model(full_check=True)`` finds,
and the rest of them, each at its place.

onnx's checker stops at its first error, so the model is walked here instead: each node goes
through ``check_node`` (its subgraphs through this walk, which knows their outer scope), each
value through ``check_value_info``, each initializer through ``check_tensor`` and our own
data checks, then the names (defined before use, single assignment) and strict shape
inference. ``check_model`` itself runs last as a safety net, so a model it rejects is never
reported clean. It runs first too, without inference: when it passes, the walk does not ask
the checker about each part again and keeps to the faults only it finds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import onnx
from onnx.onnx_cpp2py_export import checker as C
from onnx.shape_inference import InferenceError

from xocview.errors import FormatError, shorten
from xocview.formats.onnx.data import data_problem
from xocview.formats.onnx.expansion import Plan, plan
from xocview.formats.onnx.text import text
from xocview.formats.onnx.types import weightless_copy
from xocview.formats.onnx.weights import (
    external_info,
    external_numbers,
    external_problem,
    sparse_parts,
    weight_place,
)
from xocview.formats.safe_paths import path_inside
from xocview.formats.source import Source
from xocview.model import Finding
from xocview.model.validate import OUTPUT_WITHOUT_PRODUCER, PRODUCED_TWICE

__all__ = ["model_findings"]

_GRAPH = onnx.AttributeProto.GRAPH
_GRAPHS = onnx.AttributeProto.GRAPHS
_TENSOR = onnx.AttributeProto.TENSOR
_MAX_PROTO = 2**31 - 1
# What onnx's checker and inference raise; ValueError includes UnicodeDecodeError, which
# pybind11 raises for a message quoting a name that is not UTF-8.
_CHECKER_ERRORS = (C.ValidationError, InferenceError, RuntimeError, ValueError, TypeError)
# onnx's checker on external data that is a symlink ("..., but it is a symbolic link.")
_LINKED_DATA = "but it is a symbolic link"
_INFERENCE_NODE = re.compile(r"\(op_type:([^,]*), node name: ([^)]*)\)")


def model_findings(
    model: onnx.ModelProto, source: Source, top: list[int], expansion: Plan | None = None
) -> list[Finding]:
    """Every fault of ``model`` with its place; ``top[k]`` is the shared model's position of
    the graph's k-th node (so that places such as ``nodes[3] (Conv 'c1')`` match the view).

    ``expansion`` (the reader's, else made here) says whether shape inference may run: onnx's
    expands every function call, and a few nested calls stand for billions of nodes."""
    walk = _Walk(model, source, top, expansion or plan(model))
    walk.run()
    return walk.out


def _first_line(error: Exception) -> str:
    """The useful line of a checker message (they append a multi-line node dump)."""
    if isinstance(error, UnicodeDecodeError):
        return "onnx's checker rejects it, quoting text that is not UTF-8"
    text = str(error).strip()
    text = text.split("\n==> Context:")[0]
    return " ".join(text.split())


_INT32_MAX = 2**31 - 1


class _Walk:
    """One pass over the model, collecting findings in file order."""

    def __init__(
        self, model: onnx.ModelProto, source: Source, top: list[int], expansion: Plan
    ) -> None:
        self.model = model
        self.expansion = expansion
        self.inferred = False  # strict inference ran and passed: the safety net need not rerun it
        # onnx's own check_model passed first: each node, value and initializer passes its
        # checks too, so the walk keeps to the faults only it finds (names, data, places).
        self.clean = False
        self.linked_data = False  # the checker's refusal of linked external data was noted
        self.source = source
        self.top = top
        self.out: list[Finding] = []
        self.node_places: dict[str, str] = {}  # node name -> place, to locate inference errors
        self.ctx = C.CheckerContext()
        # The checker takes 32-bit versions; a larger one is reported by model_level().
        self.ctx.ir_version = min(max(model.ir_version, 0), _INT32_MAX)
        self.ctx.opset_imports = _opsets(model.opset_import)

    def error(self, place: str, message: str, fault: tuple[str, str] | None = None) -> None:
        self.out.append(Finding("error", place, message, fault))

    def run(self) -> None:
        self.model_level()
        self.clean = not self.out and self.checker_passes()
        self.graph(self.model.graph, "", (), self.top)
        for fn in self.model.functions:
            self.function(fn)
        for note in self.expansion.notes:
            self.out.append(Finding("warning", "functions", note))
        if self.expansion.infer:
            self.inference()
        self.safety_net()

    # -- the model -----------------------------------------------------------------------------

    def model_level(self) -> None:
        m = self.model
        if not m.HasField("ir_version") or m.ir_version <= 0:
            self.error("ir_version", "ir_version is not set; expected the IR version (e.g. 8)")
        elif m.ir_version > onnx.IR_VERSION:
            self.error(
                "ir_version",
                f"ir_version {m.ir_version} is newer than this ONNX ({onnx.IR_VERSION}); "
                f"expected at most {onnx.IR_VERSION}",
            )
        seen: dict[str, int] = {}
        for k, op in enumerate(m.opset_import):
            domain = op.domain or "ai.onnx"
            if domain in seen and seen[domain] != op.version:
                self.error(
                    f"opset_import[{k}]",
                    f"domain '{domain}' is imported twice, at versions {seen[domain]} and "
                    f"{op.version}; expected one version per domain",
                )
            elif domain in seen:  # skl2onnx writes so; onnx's checker and onnxruntime accept it
                self.out.append(
                    Finding(
                        "warning",
                        f"opset_import[{k}]",
                        f"domain '{domain}' is imported twice (both version {op.version})",
                    )
                )
            seen.setdefault(domain, op.version)
            if not 1 <= op.version <= _INT32_MAX:
                self.error(
                    f"opset_import[{k}]",
                    f"version {op.version} of '{domain}' is out of range; "
                    "expected an opset version such as 17",
                )
        keys: set[str] = set()
        for k, prop in enumerate(m.metadata_props):
            if prop.key in keys:
                self.error(
                    f"metadata_props[{k}]", f"duplicate key '{shorten(prop.key)}'; keys are unique"
                )
            keys.add(prop.key)

    def function(self, fn: onnx.FunctionProto) -> None:
        place = f"function '{fn.domain}.{fn.name}'" if fn.domain else f"function '{fn.name}'"
        ctx = C.CheckerContext()
        ctx.ir_version = self.ctx.ir_version
        ctx.opset_imports = _opsets(fn.opset_import)
        try:
            C.check_function(fn.SerializeToString(), ctx, C.LexicalScopeContext())
        except _CHECKER_ERRORS as e:
            self.error(place, _first_line(e))

    # -- a graph -------------------------------------------------------------------------------

    def graph(
        self, g: onnx.GraphProto, prefix: str, outer: tuple[set[str], ...], top: list[int] | None
    ) -> None:
        """Check ``g`` whose enclosing scopes define ``outer`` (a set per scope: copying them
        into each body would cost the outer names times the bodies); ``prefix`` starts its
        places."""
        defined: set[str] = set()
        chain = (*outer, defined)
        own: set[str] = set()  # names this graph defines itself
        for vi in g.input:
            self.value_info(vi, f"{prefix}graph input '{shorten(vi.name)}'")
            self.define(vi.name, own, f"{prefix}graph input '{shorten(vi.name)}'", "graph input")
        inputs = {vi.name for vi in g.input}
        self.initializers(g, prefix, own, inputs)
        defined |= own
        later = {name for node in g.node for name in node.output}
        for k, node in enumerate(g.node):
            place = self.node_place(node, k, prefix, top)
            self.node(node, place, chain, later)
            for name in node.output:
                if name and name in own:
                    self.error(
                        place,
                        f"output '{shorten(name)}' is already a graph input or initializer; "
                        "expected each name to be assigned once",
                        (PRODUCED_TWICE, name) if not prefix else None,
                    )
                defined.add(name)
        for vi in g.output:
            where = f"{prefix}graph output '{shorten(vi.name)}'"
            self.value_info(vi, where)
            if not _defined(vi.name, chain):
                fault = (OUTPUT_WITHOUT_PRODUCER, vi.name) if not prefix else None
                self.error(where, "no node, input or initializer gives this value", fault)

    def define(self, name: str, own: set[str], place: str, what: str) -> None:
        if name in own:
            self.error(place, f"'{shorten(name)}' is defined twice (as {what} again)")
        own.add(name)

    def value_info(self, vi: onnx.ValueInfoProto, place: str) -> None:
        if self.clean:
            return
        try:
            C.check_value_info(vi.SerializeToString(), self.ctx)
        except _CHECKER_ERRORS as e:
            self.error(place, _first_line(e))

    def initializers(
        self, g: onnx.GraphProto, prefix: str, own: set[str], inputs: set[str]
    ) -> None:
        """Every initializer: its header, its data against dims and type, and its name."""
        seen: set[str] = set()
        for init in g.initializer:
            place = prefix + weight_place(shorten(init.name))
            if init.name in seen:
                self.error(place, "initializer name is used twice; expected unique names")
            seen.add(init.name)
            own.add(init.name)
            if self.model.ir_version < 4 and init.name not in inputs:
                self.error(place, "not a graph input; IR versions before 4 require it")
            self.tensor(init, place)
        for sp in g.sparse_initializer:
            place = prefix + weight_place(shorten(sp.values.name))
            if sp.values.name in seen:
                self.error(place, "initializer name is used twice; expected unique names")
            seen.add(sp.values.name)
            own.add(sp.values.name)
            try:
                sparse_parts(sp, self.source.path.parent, self.source.name, place)
                C.check_sparse_tensor(sp.SerializeToString(), self.ctx)
            except FormatError as e:
                self.error(e.place, _problem(e))
            except _CHECKER_ERRORS as e:
                self.error(place, _first_line(e))

    def tensor(self, init: onnx.TensorProto, place: str) -> None:
        """One finding at most per initializer: ours (more precise) before the checker's."""
        found = data_problem(init)
        if found is not None:
            self.error(place, f"{found[0]}; expected {found[1]}")
            return
        if init.data_location == onnx.TensorProto.EXTERNAL:
            try:
                info = external_info(init) or {}
                offset, length = external_numbers(info, self.source.name, place)
                at = f"{place} external_data 'location'"
                path = path_inside(
                    info.get("location", ""), self.source.path.parent, self.source.name, at
                )
                external_problem(
                    init.data_type,
                    tuple(init.dims),
                    path,
                    info.get("location", ""),
                    offset,
                    length,
                    self.source.name,
                    place,
                )
            except FormatError as e:
                self.error(e.place, _problem(e))
            return
        if self.clean:
            return
        try:
            C.check_tensor(init.SerializeToString(), self.ctx)
        except _CHECKER_ERRORS as e:
            self.error(place, _first_line(e))

    # -- nodes ---------------------------------------------------------------------------------

    def node_place(self, node: onnx.NodeProto, k: int, prefix: str, top: list[int] | None) -> str:
        at = f"nodes[{top[k]}]" if top is not None and k < len(top) else f"{prefix}node[{k}]"
        label = f"{node.op_type} '{shorten(node.name)}'" if node.name else node.op_type
        place = f"{at} ({label})"
        if node.name:
            self.node_places.setdefault(node.name, place)
        return place

    def node(
        self, node: onnx.NodeProto, place: str, chain: tuple[set[str], ...], later: set[str]
    ) -> None:
        """Names used before they are defined, the operator schema, then the subgraphs."""
        for name in node.input:
            if not name or _defined(name, chain):
                continue
            if name in later:
                why = "is given by a later node; nodes must be in topological order"
            else:
                why = "is not a graph input, an initializer or an earlier node's output"
            self.error(place, f"input '{shorten(name)}' {why}")
        bodies = [a for a in node.attribute if a.type in (_GRAPH, _GRAPHS)]
        if self.clean:
            self.tensor_attributes(node, place)
        else:
            try:
                C.check_node(_shallow(node, bodies), self.ctx, C.LexicalScopeContext())
            except _CHECKER_ERRORS as e:
                self.error(place, _first_line(e))
            else:  # the checker lets some tensor faults pass (negative dims): one at most
                self.tensor_attributes(node, place)
        for attr in bodies:
            subs = [attr.g] if attr.type == _GRAPH else list(attr.graphs)
            for i, sub in enumerate(subs):
                label = attr.name if attr.type == _GRAPH else f"{attr.name}[{i}]"
                self.graph(sub, f"{place} {label}: ", chain, None)

    def tensor_attributes(self, node: onnx.NodeProto, place: str) -> None:
        """The first tensor-valued attribute whose data does not fit its dims and type."""
        for attr in node.attribute:
            tensors = [attr.t] if attr.type == _TENSOR else attr.tensors
            for t in tensors:
                found = data_problem(t)
                if found is not None:
                    name = shorten(attr.name)
                    self.error(place, f"attribute '{name}': {found[0]}; expected {found[1]}")
                    return

    # -- whole-model checks --------------------------------------------------------------------

    def inference(self) -> None:
        """Strict shape and type inference, as check_model(full_check=True) runs it."""
        data = self.source.data
        if len(data) > _MAX_PROTO:
            return  # the safety net checks from the path
        try:
            onnx.shape_inference.infer_shapes(data, check_type=True, strict_mode=True)
            self.inferred = True
        except _CHECKER_ERRORS as e:
            place = self.inference_place(str(e))
            if place == "graph" and self.out:
                return  # most likely a fault found already, seen from elsewhere
            if not any(f.place == place for f in self.out):  # one finding per fault
                self.error(place, _first_line(e))

    def inference_place(self, message: str) -> str:
        m = _INFERENCE_NODE.search(message)
        if m is None:
            return "graph"
        op, name = m.group(1), m.group(2)
        return self.node_places.get(name, f"node ({op} '{name}')" if name else f"node ({op})")

    def checker_passes(self) -> bool:
        """Whether check_model (without inference) passes: one C++ pass, where asking it
        about each node, value and initializer in turn costs a copy of each (8 s for 131k
        nodes in If bodies). When it fails, the walk asks about each to find every fault."""
        try:
            self.check_model(full=False)
        except _CHECKER_ERRORS:
            return False
        return True

    def safety_net(self) -> None:
        """check_model itself, so that no model it rejects is reported without an error."""
        if any(f.severity == "error" for f in self.out):
            return
        full = self.expansion.infer and not self.inferred
        if self.clean and not full:
            return  # it ran first, and passed
        try:
            self.check_model(full)
        except _CHECKER_ERRORS as e:
            self.error("model", _first_line(e))

    def check_model(self, full: bool) -> None:
        """onnx's check_model from the path, so that external data is looked for beside the
        model. onnx refuses data reached through a symbolic link, which is how a Hugging Face
        cache keeps its files (the reader follows a link in the model's folder, as onnxruntime
        does): that is a warning, and the rest is checked with the external weights declared
        as typed inputs instead of read."""
        try:
            onnx.checker.check_model(str(self.source.path), full_check=full)
        except C.ValidationError as e:
            if _LINKED_DATA not in str(e):
                raise
            if not self.linked_data:
                self.linked_data = True
                self.out.append(
                    Finding(
                        "warning",
                        "model",
                        "external data is reached through a symbolic link, which onnx's "
                        "checker refuses (onnxruntime and xocview read it)",
                    )
                )
            probe = weightless_copy(self.model)
            probe.graph.name = self.model.graph.name
            onnx.checker.check_model(probe, full_check=full)


def _defined(name: str, chain: tuple[set[str], ...]) -> bool:
    return any(name in names for names in chain)


def _shallow(node: onnx.NodeProto, bodies: list[onnx.AttributeProto]) -> bytes:
    """The node serialized with empty subgraphs: the checker would check them without knowing
    their outer scope, and reject every outer name they use; the walk checks them instead."""
    if not bodies:
        return node.SerializeToString()
    copy = onnx.NodeProto()  # built field by field: copying the bodies costs their size
    copy.input.extend(node.input)
    copy.output.extend(node.output)
    copy.op_type, copy.name, copy.domain = node.op_type, node.name, node.domain
    if getattr(node, "overload", ""):
        copy.overload = node.overload
    for attr in node.attribute:
        if attr.type not in (_GRAPH, _GRAPHS):
            copy.attribute.append(attr)
            continue
        empty = copy.attribute.add(name=attr.name, type=attr.type, ref_attr_name=attr.ref_attr_name)
        for sub in [attr.g] if attr.type == _GRAPH else attr.graphs:
            # The checker requires a name.
            shell = empty.g if attr.type == _GRAPH else empty.graphs.add()
            shell.name = text(sub.name) or "body"
    return copy.SerializeToString()


def _opsets(imports: Iterable[onnx.OperatorSetIdProto]) -> dict[str, int]:
    """The opset imports as the checker takes them (a domain that is not UTF-8 kept as text)."""
    return {text(op.domain): min(max(op.version, 0), _INT32_MAX) for op in imports}


def _problem(e: FormatError) -> str:
    return f"{e.problem}; expected {e.expected}" if e.expected else e.problem
