"""Network-like DAGs from a second generator, independent of ``layout_vs_dot.nn_like``.

``nn_like`` grows one spine with short forks and random residual edges. Real networks are
built from blocks, and what makes their drawings hard is what blocks share: this generator
strings blocks together the way model code does and keeps the tensors every layer reads.

- several inputs: tokens, an attention mask and position ids, and for an encoder-decoder a
  second token input and its mask; blocks come in stages of 3-12, and each stage makes its
  mask and cos/sin position tables from the previous stage's (a pyramid), which feed every
  attention block of the stage (fan-outs across whole stages);
- residual blocks whose skip comes from 1, 2 or 3 blocks back;
- inception-like blocks: 2-4 branches of different depths merged by Concat or Add;
- dense blocks: every layer reads a Concat of all the block's earlier outputs;
- attention blocks: q/k/v branches, the mask and positions joining, a residual around;
- side heads (auxiliary outputs) that leave the stream and end, and now and then a constant
  source (a shape or a weight kept as a node) beside an op;
- encoder-decoder graphs (40%) where the encoder's output feeds every decoder block's
  cross-attention (fan-outs across the whole decoder).

A mask fed straight from the input to every layer (GPT-2 exports) gives Graphviz dot tens
of thousands of virtual nodes at 1k nodes and it does not finish in minutes: the pyramid
keeps dot in the comparison.

Seeded: the same (n, seed) gives the same graph. Sizes come out within a block of ``n``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["net_dag"]

_KINDS = ("residual", "inception", "dense", "attention")


class _Builder:
    """Nodes are numbered as they are made; every edge goes from an older node to a newer."""

    def __init__(self, rng: np.random.Generator, p_const: float) -> None:
        self.rng = rng
        self.p_const = p_const
        self.src: list[int] = []
        self.dst: list[int] = []
        self.n = 0

    def op(self, *inputs: int) -> int:
        """A new node fed by ``inputs`` (and now and then by a constant source of its own)."""
        if self.rng.random() < self.p_const:
            inputs = (*inputs, self.source())
        v = self.n
        self.n += 1
        for u in inputs:
            self.src.append(u)
            self.dst.append(v)
        return v

    def source(self) -> int:
        self.n += 1
        return self.n - 1

    def chain(self, x: int, depth: int) -> int:
        for _ in range(depth):
            x = self.op(x)
        return x

    def depth(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))


def _residual(b: _Builder, history: list[int]) -> int:
    """conv-bn-relu body; Add with the output of 1, 2 or 3 blocks back."""
    x = history[-1]
    body = b.chain(x, b.depth(1, 3))
    span = min(len(history), b.depth(1, 3))
    return b.op(body, history[-span])


def _inception(b: _Builder, history: list[int]) -> int:
    """2-4 branches of different depths from one tensor, merged by Concat (or Add)."""
    x = history[-1]
    count = b.depth(2, 4)
    depths = b.rng.permutation(np.arange(1, 5))[:count]
    ends = [b.chain(x, int(d)) for d in depths]
    merged = b.op(*ends)
    return b.op(merged) if b.rng.random() < 0.5 else merged


def _dense(b: _Builder, history: list[int]) -> int:
    """DenseNet: every layer reads the Concat of the block input and all earlier layers."""
    feats = [history[-1]]
    for _ in range(b.depth(3, 6)):
        inp = feats[0] if len(feats) == 1 else b.op(*feats)
        feats.append(b.chain(inp, 2))
    return b.op(b.op(*feats))  # transition: Concat, then a conv


def _attention(b: _Builder, history: list[int], shared: dict[str, int]) -> int:
    """Self-attention (cross-attention too when there is a memory) and an MLP, residuals
    around both; the mask and the positions (``shared``) feed in from the graph's inputs."""
    x = history[-1]
    norm = b.op(x)
    qkv = b.op(norm)
    q, k, v = b.op(qkv), b.op(qkv), b.op(qkv)
    q = b.op(q, shared["cos"], shared["sin"])  # rotary: both tables join q and k
    k = b.op(k, shared["cos"], shared["sin"])
    scores = b.op(b.op(q, k), shared["mask"])
    ctx = b.op(b.op(scores), v)
    x = b.op(b.op(ctx), x)
    if "memory" in shared:
        q2 = b.op(b.op(x))
        k2, v2 = b.op(shared["memory"]), b.op(shared["memory"])
        att = b.op(b.op(b.op(q2, k2), shared["cross_mask"]))
        x = b.op(b.op(b.op(att, v2)), x)
    mlp = b.chain(b.op(x), b.depth(2, 3))
    return b.op(mlp, x)


def _inputs(b: _Builder) -> tuple[int, dict[str, int]]:
    """Token, mask and position inputs; the stream's start (token + position embeddings)."""
    tokens, mask, pos = b.source(), b.source(), b.source()
    raw = {"mask": mask, "pos": pos}
    return b.op(b.chain(tokens, 1), b.op(pos)), raw


def _stage_tensors(b: _Builder, raw: dict[str, int], shared: dict[str, int]) -> None:
    """What one stage's attention blocks share, made from the previous stage's (as a
    pyramid downsamples its mask and position table per stage): the mask through a few ops,
    the positions into cos and sin tables."""
    shared["mask"] = raw["mask"] = b.chain(raw["mask"], b.depth(2, 4))  # Unsqueeze, Cast, ...
    table = raw["pos"] = b.op(raw["pos"])
    shared["cos"], shared["sin"] = b.op(b.op(table)), b.op(b.op(table))


def _stream(
    b: _Builder, start: int, budget: int, raw: dict[str, int], shared: dict[str, int]
) -> int:
    """Stages of 3-12 blocks from ``start`` until ``budget`` nodes exist, each stage with its
    own shared tensors; a few side heads along the way."""
    weights = b.rng.dirichlet(np.ones(len(_KINDS)) * 2)  # each graph its own mix
    history = [start]
    while b.n < budget:
        _stage_tensors(b, raw, shared)
        for _ in range(b.depth(3, 12)):
            kind = _KINDS[int(b.rng.choice(len(_KINDS), p=weights))]
            if kind == "attention":
                out = _attention(b, history, shared)
            elif kind == "residual":
                out = _residual(b, history)
            elif kind == "inception":
                out = _inception(b, history)
            else:
                out = _dense(b, history)
            history.append(out)
            if b.rng.random() < 0.05:  # an auxiliary head: a short chain that ends
                b.chain(out, b.depth(2, 4))
            if b.n >= budget:
                break
    return history[-1]


def net_dag(n: int, seed: int = 0) -> tuple[str, int, np.ndarray, np.ndarray]:
    """(name, node count, sources, targets) of a network-like DAG of about ``n`` nodes."""
    rng = np.random.default_rng(seed)
    b = _Builder(rng, p_const=float(rng.uniform(0.03, 0.15)))
    shared: dict[str, int] = {}
    x, raw = _inputs(b)
    if rng.random() < 0.4:  # encoder-decoder: the encoder's output feeds every decoder block
        decoder = int(n * rng.uniform(0.1, 0.25))
        memory = _stream(b, x, n - decoder, raw, shared)
        shared["memory"] = b.op(memory)
        shared["cross_mask"] = b.chain(b.source(), 2)
        x = b.op(b.chain(b.source(), 1), b.op(raw["pos"]))
    x = _stream(b, x, n, raw, shared)
    b.chain(x, 2)  # the head
    src = np.array(b.src, dtype=np.int64)
    dst = np.array(b.dst, dtype=np.int64)
    return f"net-dags {n} s{seed}", b.n, src, dst
