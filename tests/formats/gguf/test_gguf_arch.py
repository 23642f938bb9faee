"""GGUF files whose architecture has a template open as the model's forward pass and run:
logits equal transformers' on the weights the file holds (live with torch, and for the
committed Q8_0 Llama always), q/k rows back in Hugging Face's order, the memory budget checked
on float32 sizes before anything is dequantized, refusals that open the tensor tree saying
why, and an 8B-shaped file opened lazily."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from tests.data.gguf import make_gguf
from tests.formats.llm.kv_cache import decode_on_executor, decode_on_onnxruntime
from xocview.errors import RunError
from xocview.executor import run
from xocview.formats import gguf as fmt
from xocview.formats.gguf import arch, blockwise
from xocview.formats.llm.config import NotBuilt
from xocview.formats.llm.gguf_config import from_gguf
from xocview.formats.source import Source
from xocview.model import Graph, validate

DATA = Path(__file__).parents[2] / "data" / "gguf"

LIVE = [
    ("llama", Q.F32),
    ("llama", Q.F16),
    ("llama", Q.Q8_0),
    ("llama", Q.Q4_0),
    ("llama3", Q.F32),
    ("llama3", Q.Q8_0),
    ("llama-linear", Q.F32),
    ("phi3-longrope", Q.F32),
    ("phi3-longrope", Q.Q8_0),
    ("qwen2", Q.F32),
    ("qwen2", Q.Q8_0),
    ("qwen2-yarn", Q.F32),
    ("qwen3", Q.F32),
    ("phi3", Q.F32),
    ("phi3", Q.Q8_0),
    ("mixtral", Q.F32),
    ("mixtral", Q.Q4_0),
    ("qwen2moe", Q.F32),
    ("qwen3moe", Q.Q8_0),
    ("gemma", Q.F32),
    ("gemma2", Q.F32),
    ("gemma3", Q.F32),
    ("gemma3", Q.Q8_0),
    ("gemma3-scaled", Q.F32),
    ("gpt2", Q.F32),
    ("gpt2", Q.Q8_0),
]
# family -> the model_type it builds as
MODEL_TYPES = {
    "llama3": "llama",
    "llama-linear": "llama",
    "qwen2-yarn": "qwen2",
    "phi3-longrope": "phi3",
    "qwen2moe": "qwen2_moe",
    "qwen3moe": "qwen3_moe",
    "gemma3": "gemma3_text",
    "gemma3-scaled": "gemma3_text",
}


def _weight(graph: Graph, name: str) -> np.ndarray:
    """A bound weight's float32 values, from its DequantizeLinear's inputs for Q8_0/Q4_0."""
    t = graph.tensor(name)
    if t.has_data:
        return t.data
    values, scales = graph.tensor(name + ".values").data, graph.tensor(name + ".scales").data
    return values.astype(np.float32) * np.repeat(scales, 32, axis=1)


def _logits(graph: Graph, ids: np.ndarray) -> np.ndarray:
    return run(graph, {"input_ids": ids}).outputs["logits"]


def test_committed_q8_0_llama_runs_as_transformers_did() -> None:
    graph = fmt.load(Source(DATA / "tiny_llama_q8_0.gguf"))
    validate(graph)
    assert graph.metadata["gguf"]["graph"] == "the architecture's forward pass"
    assert graph.metadata["llm"]["model_type"] == "llama"
    assert (graph.id, graph.name) == ("tiny_llama_q8_0", "tiny llama")
    assert graph.metadata["tokenizer"]["vocab_size"] == 128
    want = np.load(DATA / "tiny_llama_q8_0.npz")
    got = _logits(graph, want["input_ids"])
    np.testing.assert_allclose(got, want["logits"], rtol=1e-3, atol=1e-4)
    # Q8_0 is drawn as DequantizeLinear of the file's int8 values and float32 scales
    q = graph.tensor("model.layers.1.self_attn.q_proj.weight.values")
    assert (q.kind, q.dtype, q.shape) == ("weight", "int8", [64, 64])
    assert q.metadata["gguf_tensor"] == "blk.1.attn_q.weight"
    assert q.metadata["ggml_type"] == "Q8_0"
    assert "4 heads" in q.metadata["rows"]
    assert graph.tensor("model.layers.1.self_attn.q_proj.weight.scales").shape == [64, 2]
    node = graph.node("model.layers.1.self_attn.q_proj.weight/DequantizeLinear")
    assert node.attributes == {"axis": 1, "block_size": 32}
    assert node.metadata["parent_id"] == "model.layers.1.self_attn"
    assert "rows" not in graph.tensor("model.layers.1.self_attn.v_proj.weight.values").metadata
    k = graph.tensor("model.layers.1.self_attn.k_proj.weight.values")
    assert "2 heads" in k.metadata["rows"]
    # the first view shows the stack: one group per decoder block
    assert graph.node("model.layers.0").op_type == "DecoderLayer"


def test_the_budget_sees_float32_sizes_before_anything_is_dequantized(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = DATA / "tiny_llama_q8_0.gguf"
    graph = fmt.load(Source(path))
    floats = sum(4 * int(np.prod(t.shape)) for t in graph.tensors if t.id.endswith(".weight"))
    assert floats > 3 * path.stat().st_size  # Q8_0 holds ~1.06 bytes a value

    def never(*args: Any) -> np.ndarray:
        raise AssertionError("dequantized before the budget check")

    monkeypatch.setattr(arch, "dequantize", never)
    monkeypatch.setattr(blockwise, "split", never)
    with pytest.raises(RunError, match="memory budget"):
        run(graph, {"input_ids": np.array([[1, 2, 3]])}, max_memory=path.stat().st_size * 2)


@pytest.mark.parametrize(("family", "qtype"), LIVE, ids=[f"{f}-{q.name}" for f, q in LIVE])
def test_logits_equal_transformers_on_the_files_weights(
    family: str, qtype: Q, tmp_path: Path
) -> None:
    pytest.importorskip("torch", reason="torch is a bench extra, not in CI")
    pytest.importorskip("transformers", reason="transformers is a bench extra")
    model = make_gguf.tiny_model(family)
    path = make_gguf.write_gguf(tmp_path / f"{family}.gguf", model, family, qtype)
    want = make_gguf.reference_logits(model, qtype, family)
    graph = fmt.load(Source(path))
    validate(graph)
    assert graph.metadata["llm"]["model_type"] == MODEL_TYPES.get(family, family)
    got = _logits(graph, make_gguf.PROMPT)
    print(f"{family} {qtype.name}: largest |difference| {np.abs(got - want).max():.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    if family == "phi3-longrope":  # short factors and attention factor: not plain rope
        assert graph.metadata["llm"]["rope_kind"] == "longrope"
        assert "notes" not in graph.metadata  # rope_factors_long.weight takes over past 32
        import torch

        longer = (np.arange(40, dtype=np.int64)[None, :] * 37 + 5) % 64
        with torch.no_grad():
            want_long = model(torch.from_numpy(longer)).logits.numpy()
        np.testing.assert_allclose(_logits(graph, longer), want_long, rtol=1e-3, atol=1e-4)
    if family == "qwen2-yarn":
        assert graph.metadata["llm"]["rope_kind"] == "yarn"
        assert dict(graph.metadata["llm"]["rope_scaling"])["factor"] == 4.0
    # the q rows read back are transformers' own (llama.cpp's permutation undone)
    state = model.state_dict()
    name = {
        "phi3": "model.layers.0.self_attn.qkv_proj.weight",
        "gpt2": "transformer.h.0.attn.c_attn.weight",
    }.get(family.split("-")[0], "model.layers.0.self_attn.q_proj.weight")
    hf = state[name].numpy()
    np.testing.assert_array_equal(_weight(graph, name), hf.T if family == "gpt2" else hf)
    stored = name + ".values" if qtype in (Q.Q8_0, Q.Q4_0) else name
    assert ("rows" in graph.tensor(stored).metadata) == (make_gguf.FAMILIES[family][2] == "llama")


def _tiny(
    path: Path,
    arch_name: str = "llama",
    drop: str = "",
    experts: str = "",
    rope_freqs: int = 0,
    **extra: Any,
) -> Path:
    """A one-block F32 file with llama.cpp's names and keys, hidden 8, 2 heads; with
    ``experts`` ("stacked" or "each") 4 experts, stacked or one tensor each as early
    Mixtral files have them; with ``rope_freqs`` that many rope frequency factors."""
    rng = np.random.default_rng(0)
    w = gguf.GGUFWriter(path, arch_name)
    w.add_layer_norm_rms_eps(1e-5)
    keys = {"block_count": 1, "embedding_length": 8, "feed_forward_length": 16}
    for key, value in (keys | {"attention.head_count": 2} | extra).items():
        if isinstance(value, str):
            w.add_string(f"{arch_name}.{key}", value)
        else:
            w.add_uint32(f"{arch_name}.{key}", value)
    shapes = {"token_embd": (32, 8), "output_norm": (8,), "blk.0.attn_norm": (8,)}
    shapes |= {f"blk.0.attn_{x}": (8, 8) for x in ("q", "k", "v", "output")}
    shapes |= {"blk.0.ffn_norm": (8,)}
    if rope_freqs:
        shapes["rope_freqs"] = (rope_freqs,)
    ffn = {"ffn_gate": (16, 8), "ffn_up": (16, 8), "ffn_down": (8, 16)}
    if experts:
        w.add_expert_count(4)
        w.add_expert_used_count(2)
        shapes["blk.0.ffn_gate_inp"] = (4, 8)
    for part, shape in ffn.items():
        if not experts:
            shapes[f"blk.0.{part}"] = shape
            continue
        stacked = rng.standard_normal((4, *shape)).astype(np.float32)
        if experts == "stacked":
            w.add_tensor(f"blk.0.{part}_exps.weight", stacked)
        for e in range(4) if experts == "each" else ():
            w.add_tensor(f"blk.0.{part}.{e}.weight", stacked[e])
    for name, shape in shapes.items():
        if name != drop:
            w.add_tensor(f"{name}.weight", rng.standard_normal(shape).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_early_mixtral_files_with_one_tensor_per_expert_run_as_stacked_ones(
    tmp_path: Path,
) -> None:
    ids = np.array([[1, 5, 7, 2]])
    stacked = fmt.load(Source(_tiny(tmp_path / "s.gguf", experts="stacked")))
    each = fmt.load(Source(_tiny(tmp_path / "e.gguf", experts="each")))
    assert stacked.metadata["llm"]["model_type"] == each.metadata["llm"]["model_type"] == "mixtral"
    expert = each.tensor("model.layers.0.block_sparse_moe.experts.3.w2.weight")
    assert expert.metadata["gguf_tensor"] == "blk.0.ffn_down.3.weight"
    assert stacked.tensor(expert.id).metadata["expert"] == 3
    np.testing.assert_array_equal(stacked.tensor(expert.id).data, expert.data)
    np.testing.assert_array_equal(_logits(stacked, ids), _logits(each, ids))


def test_a_tied_file_without_output_runs_on_its_embedding(tmp_path: Path) -> None:
    graph = fmt.load(Source(_tiny(tmp_path / "t.gguf")))
    validate(graph)
    assert graph.metadata["llm"]["tie_word_embeddings"] is True
    assert graph.metadata["llm"]["vocab"] == 32
    logits = _logits(graph, np.array([[1, 5, 7]]))
    assert logits.shape == (1, 3, 32) and np.isfinite(logits).all()


@pytest.mark.parametrize(
    ("arch_name", "drop", "extra", "reason"),
    [
        ("mamba", "", {}, "GGUF architecture 'mamba' has no architecture template"),
        ("llama", "", {"rope.scaling.type": "dynamic"}, "rope scaling 'dynamic' is not built"),
        ("llama", "", {"rope.scaling.type": "yarn"}, "'yarn' without a positive llama.rope"),
        ("llama", "", {"rope.scaling.type": "linear"}, "without a positive llama.rope.scaling"),
        ("llama", "blk.0.ffn_down", {}, "no such tensor"),
        ("llama", "", {"expert_count": 4}, "4 experts but no router blk.0.ffn_gate_inp"),
        ("llama", "", {"attention.head_count_kv": 3}, "2 attention heads do not share 3"),
        # a damaged count: refused from the tensors before a layer is listed (fuzz, s3-000104)
        ("llama", "", {"block_count": 1 << 30}, "has no tensors of blk.1073741823"),
        ("llama", "", {"attention.key_length": 2}, "is [8, 8], not the [4, 8] of 2 heads"),
        ("llama", "", {"embedding_length": 12}, "over a hidden size of 12"),
        ("llama", "", {"attention.key_length": 3}, "head size 3 is odd"),
    ],
)
def test_files_the_template_cannot_draw_open_as_their_tensor_tree_saying_why(
    tmp_path: Path, arch_name: str, drop: str, extra: dict[str, Any], reason: str
) -> None:
    graph = fmt.load(Source(_tiny(tmp_path / "x.gguf", arch_name, drop, **extra)))
    note = graph.metadata["gguf"]["graph"]
    assert reason in note and note.endswith("opened as its tensor tree"), note
    assert "llm" not in graph.metadata
    assert any(t.id == "blk.0.attn_q.weight" for t in graph.tensors)


def test_rope_freqs_divide_llama_frequencies_and_a_wrong_count_is_named(tmp_path: Path) -> None:
    graph = fmt.load(Source(_tiny(tmp_path / "f.gguf", rope_freqs=2)))
    assert graph.metadata["llm"]["rope_kind"] == "factors"
    cos = graph.tensor("rotary_emb.cos_cache")
    assert "rope_freqs.weight" in cos.metadata["values"]
    reader = gguf.GGUFReader(tmp_path / "f.gguf")
    factors = next(t.data for t in reader.tensors if t.name == "rope_freqs.weight")
    inv = 1.0 / (10000.0 ** (np.arange(0, 4, 2) / 4)) / factors
    np.testing.assert_allclose(cos.data[:5], np.cos(np.arange(5)[:, None] * inv), atol=1e-6)
    assert np.isfinite(_logits(graph, np.array([[1, 5, 7]]))).all()
    note = fmt.load(Source(_tiny(tmp_path / "w.gguf", rope_freqs=3))).metadata["gguf"]["graph"]
    assert "rope_freqs.weight: shape [3]" in note and "[2] frequency factors" in note, note


def test_a_tensor_without_a_place_in_the_template_is_named(tmp_path: Path) -> None:
    path = tmp_path / "rope_freqs.gguf"
    w = gguf.GGUFWriter(path, "qwen2")
    for key, value in (("block_count", 1), ("embedding_length", 8), ("feed_forward_length", 16)):
        w.add_uint32(f"qwen2.{key}", value)
    w.add_uint32("qwen2.attention.head_count", 2)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), np.float32))
    w.add_tensor("rope_freqs.weight", np.ones(2, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    note = fmt.load(Source(path)).metadata["gguf"]["graph"]
    assert "'rope_freqs.weight' has no place in the qwen2 template" in note


def _llama_8b(path: Path, qtype: Q = Q.Q4_K) -> None:
    """A sparse Q4_K (or Q8_0) file shaped like Llama 3 8B with the keys llama.cpp writes."""
    w = gguf.GGUFWriter(path, "llama")
    dim, kv, ffn, vocab = 4096, 1024, 14336, 128_256
    for key, value in (("block_count", 32), ("embedding_length", dim), ("context_length", 8192)):
        w.add_uint32(f"llama.{key}", value)
    w.add_feed_forward_length(ffn)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(500000.0)
    w.add_rope_dimension_count(128)
    w.add_tokenizer_model("gpt2")
    w.add_token_list([f"token{i}" for i in range(vocab)])
    w.add_token_merges([f"a{i} b{i}" for i in range(280_147)])
    shapes: dict[str, tuple[int, ...]] = {"token_embd.weight": (vocab, dim)}
    for i in range(32):
        for part, shape in (
            *(("attn_norm", (dim,)), ("attn_q", (dim, dim)), ("attn_k", (kv, dim))),
            *(("attn_v", (kv, dim)), ("attn_output", (dim, dim)), ("ffn_norm", (dim,))),
            *(("ffn_gate", (ffn, dim)), ("ffn_up", (ffn, dim)), ("ffn_down", (dim, ffn))),
        ):
            shapes[f"blk.{i}.{part}.weight"] = shape
    shapes |= {"output_norm.weight": (dim,), "output.weight": (vocab, dim)}
    end = 0
    for name, shape in shapes.items():
        count = int(np.prod(shape))
        block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        size, kind = (count * 4, None) if len(shape) == 1 else (count // block * type_size, qtype)
        w.add_tensor_info(name, shape, np.dtype(np.float32), size, kind)
        end += size
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    with open(path, "r+b") as f:
        f.truncate(-(-path.stat().st_size // 32) * 32 + end)  # a hole: no tensor on disk


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's VmHWM")
@pytest.mark.parametrize("qtype", [Q.Q4_K, Q.Q8_0])
def test_an_8b_shaped_llama_opens_as_its_architecture_in_under_2_s_and_300_mb(
    tmp_path: Path, qtype: Q
) -> None:
    path = tmp_path / f"llama-8b-{qtype.name}.gguf"
    _llama_8b(path, qtype)
    script = textwrap.dedent(
        f"""
        import json, re, time
        from xocview.formats import gguf
        from xocview.formats.source import Source
        from xocview.model import validate
        def hwm():
            return int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read())[1])
        start = time.perf_counter()
        graph = gguf.load(Source({str(path)!r}))
        seconds = time.perf_counter() - start
        validate(graph)
        print(json.dumps({{"seconds": seconds, "peak_kb": hwm(), "nodes": len(graph.nodes),
            "note": graph.metadata["gguf"]["graph"], "llm": graph.metadata["llm"],
            "read": sum(not callable(t._data) and t.kind == "weight" and "gguf_tensor"
                        in t.metadata for t in graph.tensors),
            "dequantize_nodes": sum(n.op_type == "DequantizeLinear" for n in graph.nodes)}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    print({k: v for k, v in out.items() if k != "llm"})
    assert out["note"] == "the architecture's forward pass"
    assert out["llm"]["layers"] == 32 and out["llm"]["kv_heads"] == 8
    assert out["llm"]["vocab"] == 128_256 and out["llm"]["rope_theta"] == 500000.0
    assert out["read"] == 0
    assert out["dequantize_nodes"] == (0 if qtype == Q.Q4_K else 7 * 32 + 2)
    assert out["seconds"] < 2.0
    assert out["peak_kb"] < 300 * 1024


def test_metadata_readings_follow_llama_cpp() -> None:
    keys = {"block_count": 12, "embedding_length": 64, "feed_forward_length": 96}
    keys |= {"attention.head_count": 4, "rope.freq_base": 1e6, "attention.key_length": 32}
    gemma3 = {f"gemma3.{k}": v for k, v in keys.items()} | {"general.architecture": "gemma3"}
    cfg = from_gguf(gemma3, {"token_embd.weight": (50, 64)})
    assert cfg.model_type == "gemma3_text" and cfg.vocab == 50 and cfg.tie_word_embeddings
    assert cfg.head_dim == 32 and cfg.attn_scale is None and cfg.hidden_act.startswith("gelu")
    assert [i for i, r in enumerate(cfg.layer_ropes) if r[0] == 1e6] == [5, 11]
    assert set(cfg.layer_ropes) == {(1e6, "default", ()), (1e4, "default", ())}
    scaled = gemma3 | {"gemma3.rope.scaling.type": "linear", "gemma3.rope.scaling.factor": 8.0}
    ropes = from_gguf(scaled, {"token_embd.weight": (50, 64)}).layer_ropes  # Gemma 3 4B
    assert ropes[5] == (1e6, "linear", (("factor", 8.0),)) and ropes[0] == (1e4, "default", ())
    gemma2 = {f"gemma2.{k}": v for k, v in keys.items() if k != "block_count"}
    gemma2 |= {"general.architecture": "gemma2", "gemma2.block_count": 46}
    assert from_gguf(gemma2, {"token_embd.weight": (50, 64)}).attn_scale == 1 / 4
    llama = {f"llama.{k}": v for k, v in keys.items()} | {"general.architecture": "llama"}
    tokens = {"tokenizer.ggml.tokens": ["a", "b", "c"]}
    assert from_gguf(llama | tokens, {"output.weight": (3, 64)}).vocab == 3
    with pytest.raises(NotBuilt, match="per-layer values"):
        from_gguf(llama | {"llama.attention.head_count_kv": np.array([4, 2])})
    with pytest.raises(NotBuilt, match="no token_embd"):
        from_gguf(llama)
    moe = llama | {"llama.expert_count": 8, "llama.expert_used_count": 2}
    routers = {f"blk.{i}.ffn_gate_inp.weight": (8, 64) for i in range(12)}
    cfg = from_gguf(moe | tokens, routers)
    assert (cfg.model_type, cfg.experts, cfg.experts_per_tok) == ("mixtral", 8, 2)
    assert cfg.moe_intermediate == 96 and cfg.norm_topk and cfg.dense_layers == ()


@pytest.mark.parametrize("qtype", [Q.Q8_0, Q.Q4_0])
def test_blockwise_values_and_scales_equal_ggml_dequantization(qtype: Q) -> None:
    rows = np.random.default_rng(1).standard_normal((6, 96)).astype(np.float32)
    raw = gguf.quants.quantize(rows, qtype)
    want = gguf.quants.dequantize(raw, qtype)
    values, scales = blockwise.split(qtype.name, raw.reshape(-1), 6, 96)
    assert values.dtype == np.int8 and scales.dtype == np.float32 and scales.shape == (6, 3)
    got = values.astype(np.float32) * np.repeat(scales, 32, axis=1)
    np.testing.assert_array_equal(got, want)
    if qtype == Q.Q4_0:
        assert values.min() >= -8 and values.max() <= 7


def test_the_q8_0_graph_saved_as_onnx_runs_on_onnxruntime(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    from xocview.formats.onnx.writer import save

    graph = fmt.load(Source(DATA / "tiny_llama_q8_0.gguf"))
    save(graph, tmp_path / "tiny.onnx")
    want = np.load(DATA / "tiny_llama_q8_0.npz")
    session = ort.InferenceSession(str(tmp_path / "tiny.onnx"))
    whole, step = decode_on_onnxruntime(session, graph, want["input_ids"])
    np.testing.assert_allclose(whole, want["logits"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(step[:, -1], want["logits"][:, -1], rtol=1e-3, atol=1e-4)
    whole, step = decode_on_executor(graph, want["input_ids"])
    np.testing.assert_allclose(step[:, -1], want["logits"][:, -1], rtol=1e-3, atol=1e-4)
