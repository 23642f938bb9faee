"""The layer graph of a Keras model config (JSON data, never deserialized objects).

Functional models wire layers by ``inbound_nodes``: Keras 3 writes each call as
``{"args": [...], "kwargs": {...}}`` whose ``__keras_tensor__`` entries name their producer
by ``keras_history: [layer, node, tensor]``; tf.keras 2 wrote each call as a list of
``[layer, node, tensor, kwargs]``. Sequential models chain their layers. A nested model is a
group of its layers' nodes; a layer that runs as several ONNX ops is a group of them
(``derived: keras``); a layer without a mapping stays a node of domain ``keras``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from xocview.errors import FormatError
from xocview.formats.keras.call import Call, NotMapped
from xocview.formats.keras.layers import KERAS_ONNX
from xocview.formats.keras.weights import LayerKey, Weights, snake_case
from xocview.formats.onnx_emit import placed
from xocview.formats.unique_ids import unique
from xocview.model import Node, Tensor
from xocview.model.dtypes import DTYPES

__all__ = ["MODELS", "Builder"]

MODELS = frozenset({"Functional", "Sequential", "Model"})
Ref = tuple[str, int, int]  # (layer, call, output)


class Builder:
    """Nodes and tensors of one model, built layer call by layer call."""

    def __init__(self, file: str, weights: Weights, hints: dict[str, list[int]]) -> None:
        self.file, self.weights = file, weights
        # Layer output shapes inferred from a first build: given to a second build of a
        # tf.keras 2 file (which records no shapes) whose lowerings needed a rank.
        self.hints = hints
        self.by_rank = False
        self.tensors: list[Tensor] = []
        self.nodes: list[Node] = []
        self.inputs: list[int] = []
        self.node_ids: set[str] = set()
        self.not_mapped: set[str] = set()
        self.shared: dict[LayerKey, list[int]] = {}

    def error(self, place: str, problem: str, expected: str = "") -> FormatError:
        return FormatError(self.file, place, problem, expected)

    # -- models ------------------------------------------------------------------------------

    def model(self, doc: Any, place: str, ctx: Scope, given: list[int] | None) -> list[int]:
        """Build a Functional or Sequential model's layers; its output tensors."""
        cls = doc.get("class_name")
        at = f"{place}.config" if place else "config"
        cfg = _obj(self, doc.get("config"), at)
        layers = cfg.get("layers")
        if not isinstance(layers, list):
            raise self.error(f"{at}.layers", "is missing or not a list", "a list")
        if cls == "Sequential":
            return self._sequential(layers, at, ctx, given)
        return self._functional(cfg, at, ctx, given)

    def _sequential(self, layers: list, place: str, ctx: Scope, given: list[int] | None) -> list:
        kept = [(k, _obj(self, d, f"{place}.layers[{k}]")) for k, d in enumerate(layers)]
        first = kept[0][1] if kept else {}
        if given is None:
            given = [self._input(first, f"{place}.layers[0]", ctx, seq=True)]
        x = given
        for k, entry in kept:
            if entry.get("class_name") == "InputLayer":
                continue
            key = ctx.key(str(entry.get("class_name")), _name(entry))
            x = self.call(entry, f"{place}.layers[{k}]", ctx, x, 0, {}, key)
        return x

    def _functional(self, cfg: dict, place: str, ctx: Scope, given: list[int] | None) -> list:
        layers = [_obj(self, d, f"{place}.layers[{k}]") for k, d in enumerate(cfg["layers"])]
        names = {_name(e): k for k, e in enumerate(layers)}
        keys = [ctx.key(str(e.get("class_name")), _name(e)) for e in layers]
        made: dict[Ref, int] = {}
        ins = _refs_list(self, cfg.get("input_layers"), f"{place}.input_layers")
        for j, ref in enumerate(ins):
            if ref[0] not in names:
                raise self.error(
                    f"{place}.input_layers[{j}]",
                    f"names layer {ref[0]!r}, which is not in the model",
                )
            entry = layers[names[ref[0]]]
            if given is None:
                made[ref] = self._input(entry, f"{place}.layers[{names[ref[0]]}]", ctx)
            elif j < len(given):
                made[ref] = given[j]
        pending = [
            (k, n)
            for k, e in enumerate(layers)
            for n in range(len(_calls(self, e, f"{place}.layers[{k}]")))
        ]
        while pending:
            left = [p for p in pending if not self._try_call(layers, keys, p, place, ctx, made)]
            if len(left) == len(pending):
                self._unresolved(layers, names, left[0], place, made)
            pending = left
        outs = _refs_list(self, cfg.get("output_layers"), f"{place}.output_layers")
        for j, ref in enumerate(outs):
            if ref not in made:
                raise self.error(
                    f"{place}.output_layers[{j}]", f"names {list(ref)}, which no layer makes"
                )
        return [made[r] for r in outs]

    def _try_call(
        self,
        layers: list[dict],
        keys: list[LayerKey],
        p: tuple[int, int],
        place: str,
        ctx: Scope,
        made: dict[Ref, int],
    ) -> bool:
        """Make call ``p`` (layer, call) once every tensor it reads is made; whether it was."""
        k, n = p
        entry = layers[k]
        if entry.get("class_name") == "InputLayer":
            return True
        where = f"{place}.layers[{k}]"
        call = _calls(self, entry, where)[n]
        refs, kwargs = _call_refs(self, call, f"{where}.inbound_nodes[{n}]")
        if not all(r in made for r in refs):
            return False
        self._shapes(call, made)
        outs = self.call(entry, where, ctx, [made[r] for r in refs], n, kwargs, keys[k])
        for j, t in enumerate(outs):
            made[(_name(entry), n + _first_call(entry, call), j)] = t
        return True

    def _shapes(self, call: Any, made: dict[Ref, int]) -> None:
        """Shapes Keras 3 records for the tensors a call reads, given to those still unknown."""
        if not isinstance(call, dict):
            return
        for ref, cfg in _keras_tensors(call.get("args", [])):
            t = self.tensors[made[ref]]
            shape = cfg.get("shape")
            if not (t.metadata.get("rank_unknown") and isinstance(shape, list)):
                continue
            if all(v is None or isinstance(v, int) for v in shape):
                t.shape = [-1 if v is None else int(v) for v in shape]
                del t.metadata["rank_unknown"]

    def _unresolved(
        self,
        layers: list[dict],
        names: dict[str, int],
        p: tuple[int, int],
        place: str,
        made: dict[Ref, int],
    ) -> None:
        """Raise the located error of a call that reads a tensor nothing makes."""
        k, n = p
        where = f"{place}.layers[{k}].inbound_nodes[{n}]"
        refs, _ = _call_refs(self, _calls(self, layers[k], f"{place}.layers[{k}]")[n], where)
        for ref in refs:
            if ref[0] not in names:
                raise self.error(
                    where,
                    f"names layer {ref[0]!r}, which is not in the model",
                    "the name of a layer in config.layers",
                )
        missing = next(r for r in refs if r not in made)
        raise self.error(where, f"reads {list(missing)}, which no layer call makes (or a cycle)")

    def _input(self, entry: dict, place: str, ctx: Scope, seq: bool = False) -> int:
        raw = entry.get("config")
        cfg: dict[str, Any] = raw if isinstance(raw, dict) else {}
        shape = cfg.get("batch_shape", cfg.get("batch_input_shape"))
        named = seq and entry.get("class_name") != "InputLayer"  # the first layer's own name
        name = "input" if named else str(cfg.get("name") or _name(entry))
        meta: dict[str, Any] = {"class_name": entry.get("class_name")}
        if not isinstance(shape, list) or not all(v is None or isinstance(v, int) for v in shape):
            shape, meta["rank_unknown"] = [], True
        dims = [-1 if v is None else int(v) for v in shape]
        tid = ctx.prefix + name
        self.tensors.append(Tensor(tid, "input", dims, _dtype(cfg.get("dtype")), meta))
        self.inputs.append(len(self.tensors) - 1)
        return len(self.tensors) - 1

    # -- one layer call ----------------------------------------------------------------------

    def call(
        self,
        entry: dict,
        place: str,
        ctx: Scope,
        ins: list[int],
        n: int,
        kwargs: dict,
        key: LayerKey,
    ) -> list[int]:
        """One call of a layer (a nested model: a group of its layers); its outputs."""
        cls = str(entry.get("class_name"))
        cfg = entry.get("config")
        if not isinstance(cfg, dict):
            raise self.error(f"{place}.config", "is missing or not an object", "an object")
        name = _name(entry)
        nid = self._unique(ctx.prefix + name + (f"@{n}" if n else ""))
        meta: dict[str, Any] = {"class_name": cls, "name": name}
        if ctx.parent:
            meta["parent_id"] = ctx.parent
        if kwargs:
            meta["call_kwargs"] = kwargs
        if cls in MODELS and isinstance(cfg.get("layers"), list):
            meta["config"] = {k: v for k, v in cfg.items() if k != "layers"}
            self.nodes.append(Node(nid, cls, [], [], {}, {**meta, "children_ids": []}))
            inner = ctx.nested(nid, key, cls)
            start = len(self.nodes)
            outs = self.model(entry, place, inner, ins)
            group = self.nodes[start - 1]
            group.metadata["children_ids"] = [
                m.id for m in self.nodes[start:] if m.metadata.get("parent_id") == nid
            ]
            return outs
        meta["config"] = cfg
        weights = self.shared.get(key)
        if weights is None:  # a layer called again (shared) reads the same weight tensors
            weights = []
            for t in self.weights.tensors(key, nid):
                self.tensors.append(t)
                weights.append(len(self.tensors) - 1)
            self.shared[key] = weights
        return [self._layer(nid, cls, meta, ins, weights)]

    def _layer(self, nid: str, cls: str, meta: dict, ins: list[int], weights: list[int]) -> int:
        for t in ins:
            tensor = self.tensors[t]
            if tensor.metadata.get("rank_unknown") and tensor.id in self.hints:
                tensor.shape = list(self.hints[tensor.id])
                del tensor.metadata["rank_unknown"]
        lower = KERAS_ONNX.get(cls)
        mark = len(self.tensors)
        if lower is not None:
            # the call's keywords ride along as "@call" (no Keras config key has an "@")
            config = {**meta["config"], "@call": meta.get("call_kwargs", {})}
            c = Call(self.tensors, nid, config, ins, weights)
            try:
                y = lower(c)
                if y not in c.made:
                    y = c.op("Identity", [y])
            except NotMapped as e:
                del self.tensors[mark:]
                meta["not_mapped"] = str(e)
            else:
                self._place(nid, cls, meta, c, y)
                return y
        self.not_mapped.add(cls)
        out = len(self.tensors)
        self.tensors.append(Tensor(nid, "activation", [], "float32", {"rank_unknown": True}))
        self.nodes.append(Node(nid, cls, ins + weights, [out], {}, {**meta, "domain": "keras"}))
        return out

    def _place(self, nid: str, cls: str, meta: dict, c: Call, y: int) -> None:
        out = self.tensors[y]
        out.id = nid
        self.by_rank = self.by_rank or c.by_rank
        # one Keras layer: one ONNX node, or a group of them marked derived "keras"
        self.nodes.extend(placed(c.nodes, nid, cls, meta, "keras", self.node_ids))

    def _unique(self, wanted: str) -> str:
        return unique(wanted, self.node_ids)


class Scope:
    """Where layers are being built: the enclosing model group and weight-file paths."""

    def __init__(
        self, prefix: str, parent: str | None, h5: str, top: str | None, seq: bool
    ) -> None:
        self.prefix, self.parent, self.h5, self.top, self.seq = prefix, parent, h5, top, seq
        self.counts: dict[str, int] = {}

    def key(self, cls: str, name: str) -> LayerKey:
        """The layer's weight key; Keras 3 numbers class names in the model's layer order."""
        base = snake_case(cls)
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        h5 = f"{self.h5}layers/{base}" + (f"_{k}" if k else "")
        return LayerKey(h5, self.top or name, name, self.top is not None)

    def nested(self, nid: str, key: LayerKey, cls: str) -> Scope:
        inner = Scope(nid + "/", nid, key.h5 + "/", key.top, cls == "Sequential")
        if cls != "Sequential":
            inner.counts = {}
        return inner


def _obj(b: Builder, value: Any, place: str) -> dict:
    if not isinstance(value, dict):
        raise b.error(place, f"is {type(value).__name__}, not an object", "a JSON object")
    return value


def _name(entry: dict) -> str:
    name = entry.get("name")
    if not isinstance(name, str):
        cfg = entry.get("config")
        name = cfg.get("name") if isinstance(cfg, dict) else None
    return name if isinstance(name, str) else str(entry.get("class_name", "layer"))


def _first_call(entry: dict, call: Any) -> int:
    """The number tf.keras 2 gives a nested model's first listed call: 1, as its node 0 is the
    model's own making from its Input (Keras 3 and plain layers count from 0)."""
    if not isinstance(call, list) or entry.get("class_name") not in MODELS:
        return 0
    layers = (entry.get("config") or {}).get("layers")
    first = layers[0] if isinstance(layers, list) and layers else None
    return 1 if isinstance(first, dict) and first.get("class_name") == "InputLayer" else 0


def _calls(b: Builder, entry: dict, place: str) -> list:
    calls = entry.get("inbound_nodes", [])
    if not isinstance(calls, list):
        raise b.error(f"{place}.inbound_nodes", "is not a list", "a list of layer calls")
    return calls


def _refs_list(b: Builder, value: Any, place: str) -> list[Ref]:
    """``input_layers`` / ``output_layers``: one ``[name, node, tensor]`` or a list of them."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[0], str):
        value = [value]
    if not isinstance(value, list):
        raise b.error(place, "is missing or not a list", "[[layer, node, tensor], ...]")
    return [_ref(b, v, f"{place}[{k}]") for k, v in enumerate(value)]


def _ref(b: Builder, value: Any, place: str) -> Ref:
    ok = isinstance(value, list) and len(value) >= 3 and isinstance(value[0], str)
    if not ok or not all(isinstance(v, int) and not isinstance(v, bool) for v in value[1:3]):
        raise b.error(place, "is not a tensor reference", "[layer name, node index, tensor index]")
    return (value[0], value[1], value[2])


def _call_refs(b: Builder, call: Any, place: str) -> tuple[list[Ref], dict]:
    """The tensors one call reads, in order, and its other keyword arguments."""
    if isinstance(call, dict):  # Keras 3
        args, kwargs = call.get("args", []), call.get("kwargs", {})
        if not isinstance(kwargs, dict):
            raise b.error(f"{place}.kwargs", "is not an object", "an object")
        refs = list(_tensors(b, args, f"{place}.args"))
        rest: dict[str, Any] = {}
        named: list[str] = []  # the keyword of each tensor passed by keyword, in order
        for k, v in kwargs.items():
            found = list(_tensors(b, v, f"{place}.kwargs.{k}"))
            if found:
                refs.extend(found)
                named.extend([k] * len(found))
            elif v is not None:
                rest[k] = v
        if named:
            rest["tensor_kwargs"] = named
        return refs, rest
    if isinstance(call, list):  # tf.keras 2: [[layer, node, tensor, kwargs], ...]
        refs = [_ref(b, v, f"{place}[{k}]") for k, v in enumerate(call)]
        kw = call[0][3] if call and len(call[0]) > 3 and isinstance(call[0][3], dict) else {}
        tensors = {k: v for k, v in kw.items() if _is_ref(v)}  # value=[layer, node, tensor]
        if tensors:
            refs.extend(_ref(b, v, f"{place}[0][3].{k}") for k, v in tensors.items())
            kw = {k: v for k, v in kw.items() if k not in tensors}
            kw["tensor_kwargs"] = list(tensors)
        return refs, kw
    raise b.error(place, f"is {type(call).__name__}", "a layer call (an object or a list)")


def _is_ref(value: Any) -> bool:
    """A tf.keras 2 tensor passed by keyword: ``[layer, node, tensor]``."""
    return (
        isinstance(value, list)
        and len(value) == 3
        and isinstance(value[0], str)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value[1:])
    )


def _keras_tensors(value: Any) -> Iterator[tuple[Ref, dict]]:
    """Keras 3's tensors in a call's args with their configs (already checked by _tensors)."""
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        cfg = value["config"]
        h = cfg["keras_history"]
        yield (h[0], h[1], h[2]), cfg
    elif isinstance(value, list):
        for v in value:
            yield from _keras_tensors(v)


def _tensors(b: Builder, value: Any, place: str) -> Iterator[Ref]:
    if isinstance(value, dict):
        if value.get("class_name") == "__keras_tensor__":
            cfg = value.get("config")
            history = cfg.get("keras_history") if isinstance(cfg, dict) else None
            yield _ref(b, history, f"{place}.config.keras_history")
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from _tensors(b, v, f"{place}[{k}]")


def _dtype(value: Any) -> str:
    if isinstance(value, dict):  # a DTypePolicy
        value = (value.get("config") or {}).get("name")
    if value == "float64":
        return "double"
    return value if isinstance(value, str) and value in DTYPES else "float32"
