"""Hugging Face model folders built as their forward pass: the executor's logits equal
transformers' own for each family (live when torch and transformers are installed, and for
the committed tiny Llama always), groups per layer, and refusals that name what is missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.formats.llm.kv_cache import decode_on_executor, decode_on_onnxruntime
from xocview.errors import FormatError, RunError
from xocview.executor import run
from xocview.formats.llm import TEMPLATES, NotBuilt, from_gguf, from_hf, load_folder, not_built
from xocview.model import Graph, validate

DATA = Path(__file__).parents[2] / "data" / "llm" / "tiny_llama"
PROMPT = np.array([[3, 17, 42, 99, 5]], dtype=np.int64)
SIZES = {"vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2}
SIZES |= {"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96}
SIZES |= {"max_position_embeddings": 64, "bos_token_id": 1, "eos_token_id": 2}
GEMMA3_ROPES = {
    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
}
# family -> (model class, config class, extra config); largest |difference| is printed
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": ("LlamaForCausalLM", "LlamaConfig", {}),
    # sliding windows of 3 keys, shorter than the prompt: every layer, or those the config says
    "mistral": ("MistralForCausalLM", "MistralConfig", {"sliding_window": 3}),
    "qwen2": ("Qwen2ForCausalLM", "Qwen2Config", {}),
    "qwen2-window": (  # layer 1 slides (max_window_layers 1)
        "Qwen2ForCausalLM",
        "Qwen2Config",
        {"use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1},
    ),
    "qwen3": ("Qwen3ForCausalLM", "Qwen3Config", {"head_dim": 32}),
    "phi3": ("Phi3ForCausalLM", "Phi3Config", {"pad_token_id": 0, "sliding_window": 3}),
    "llama-tied": ("LlamaForCausalLM", "LlamaConfig", {"tie_word_embeddings": True}),
    "llama-sharded": ("LlamaForCausalLM", "LlamaConfig", {}),
    "llama-bf16": ("LlamaForCausalLM", "LlamaConfig", {}),
    "gemma": ("GemmaForCausalLM", "GemmaConfig", {"head_dim": 16}),
    "mixtral": (
        "MixtralForCausalLM",
        "MixtralConfig",
        {"num_local_experts": 4, "num_experts_per_tok": 2},
    ),
    "qwen2-moe": (  # layer 1 dense; a shared expert beside the routed ones
        "Qwen2MoeForCausalLM",
        "Qwen2MoeConfig",
        {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
        | {"shared_expert_intermediate_size": 48, "mlp_only_layers": [1]},
    ),
    "qwen3-moe": (
        "Qwen3MoeForCausalLM",
        "Qwen3MoeConfig",
        {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}
        | {"norm_topk_prob": True},
    ),
    "gemma2": (
        "Gemma2ForCausalLM",
        "Gemma2Config",
        {"head_dim": 16, "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0}
        | {"sliding_window": 3},
    ),
    "gemma3": (
        "Gemma3ForCausalLM",
        "Gemma3TextConfig",
        {"head_dim": 16, "layer_types": ["sliding_attention", "full_attention"]}
        | {"sliding_window": 3},
    ),
    "gemma3-scaled": (  # Gemma 3 4B and up: linear rope on the full layers only
        "Gemma3ForCausalLM",
        "Gemma3TextConfig",
        {"head_dim": 16, "layer_types": ["sliding_attention", "full_attention"]}
        | {"sliding_window": 3, "rope_parameters": GEMMA3_ROPES},
    ),
    "phi3-partial": (
        "Phi3ForCausalLM",
        "Phi3Config",
        {"pad_token_id": 0, "partial_rotary_factor": 0.5},
    ),
}


def _logits(graph: Graph, ids: np.ndarray) -> np.ndarray:
    out = run(graph, {"input_ids": ids}).outputs["logits"]
    assert out.shape == (1, ids.shape[1], graph.tensors[graph.outputs[0]].shape[2])
    return out


def _save(model: Any, folder: Path, shard: str | None, half: bool) -> np.ndarray:
    """Nudge every weight (norms start at one), save, return transformers' logits."""
    import torch

    model.eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
        if half:  # stored as bfloat16; the reference runs on the same rounded weights
            model.to(torch.bfloat16).save_pretrained(folder)
            model.float()
        elif shard:
            model.save_pretrained(folder, max_shard_size=shard)
            assert (folder / "model.safetensors.index.json").is_file()
        else:
            model.save_pretrained(folder)
        return model(torch.from_numpy(PROMPT)).logits.numpy()


@pytest.mark.parametrize("family", [*sorted(FAMILIES), "gpt2"])
def test_logits_equal_transformers(family: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="torch is a bench extra, not in CI")
    transformers = pytest.importorskip("transformers", reason="transformers is a bench extra")
    torch.manual_seed(0)
    if family == "gpt2":
        cfg = transformers.GPT2Config(
            vocab_size=128,
            n_embd=64,
            n_layer=2,
            n_head=4,
            n_positions=64,
            bos_token_id=1,
            eos_token_id=2,
        )
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        model_cls, cfg_cls, extra = FAMILIES[family]
        cfg = getattr(transformers, cfg_cls)(**SIZES, **extra)
        model = getattr(transformers, model_cls)(cfg)
    shard = "40KB" if family.endswith("-sharded") else None
    want = _save(model, tmp_path, shard, family.endswith("-bf16"))
    graph = load_folder(tmp_path)
    assert graph is not None
    got = _logits(graph, PROMPT)
    print(f"{family}: largest |difference| {np.abs(got - want).max():.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    # the last token decoded on the cache of the others (and through the window) agrees
    step = decode_on_executor(graph, PROMPT)[1]
    np.testing.assert_allclose(step[:, -1], want[:, -1], rtol=1e-3, atol=1e-4)
    window = graph.metadata["llm"]["window"]
    sliding = [n for n in graph.nodes if n.op_type == "SlidingWindowMask"]
    assert (
        len(sliding)
        == len(graph.metadata["llm"]["sliding_layers"])
        == (
            {
                "mistral": 2,
                "qwen2-window": 1,
                "phi3": 2,
                "gemma2": 1,
                "gemma3": 1,
                "gemma3-scaled": 1,
            }.get(family, 0)
        )
    ), (window, [n.id for n in sliding])
    if family == "mixtral":  # the experts are a group of numbered expert groups
        experts = graph.node("model.layers.1.block_sparse_moe.experts")
        kids = experts.metadata["children_ids"]
        assert kids[:4] == [f"model.layers.1.block_sparse_moe.experts.{e}" for e in range(4)]
        assert graph.node(kids[4]).op_type == "Sum"
    if family == "qwen2-moe":
        assert graph.node("model.layers.1.mlp").op_type == "MLP"
        assert graph.node("model.layers.0.mlp").op_type == "SparseMoE"


def test_a_gemma3_vision_language_folder_runs_its_text_model(tmp_path: Path) -> None:
    """Gemma 3 4B and up are Gemma3ForConditionalGeneration: its text model (saved as
    language_model.model.*) is built and gives transformers' logits for token ids."""
    torch = pytest.importorskip("torch", reason="torch is a bench extra, not in CI")
    transformers = pytest.importorskip("transformers", reason="transformers is a bench extra")
    torch.manual_seed(0)
    text = SIZES | {"head_dim": 16, "layer_types": ["sliding_attention", "full_attention"]}
    vision = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1}
    vision |= {"num_attention_heads": 2, "image_size": 28, "patch_size": 14}
    cfg = transformers.Gemma3Config(text_config=text, vision_config=vision, mm_tokens_per_image=4)
    want = _save(transformers.Gemma3ForConditionalGeneration(cfg), tmp_path, None, False)
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "gemma3"
    assert not_built(tmp_path) is None
    graph = load_folder(tmp_path)
    assert graph is not None
    got = _logits(graph, PROMPT)
    print(f"gemma3 vision-language: largest |difference| {np.abs(got - want).max():.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    assert any("vision tower and projector" in n for n in graph.metadata["notes"])
    assert graph.tensor("model.layers.0.self_attn.q_proj.weight") is not None


def test_committed_llama_runs_as_transformers_did() -> None:
    graph = load_folder(DATA)
    assert graph is not None
    want = np.load(DATA / "logits.npz")
    got = _logits(graph, want["input_ids"])
    np.testing.assert_allclose(got, want["logits"], rtol=1e-3, atol=1e-4)
    # and the folder's config.json opens the same architecture
    same = load_folder(DATA / "config.json")
    assert same is not None and [n.id for n in same.nodes] == [n.id for n in graph.nodes]


def test_layers_are_groups_holding_their_modules() -> None:
    graph = load_folder(DATA)
    assert graph is not None
    assert validate(graph) == []
    top = [n.id for n in graph.nodes if "parent_id" not in n.metadata]
    assert "model.layers.0" in top and "model.layers.1" in top
    assert "model.layers.0.self_attn.q_proj" not in top
    # each attention counts positions on from its own KV cache's length
    assert graph.node("model.layers.1.self_attn.positions").op_type == "PositionIds"
    assert "positions" not in top
    layer = graph.node("model.layers.1")
    assert layer.metadata["module"] == "model.layers.1"
    assert layer.metadata["children_ids"] == [
        "model.layers.1.input_layernorm",
        "model.layers.1.self_attn",
        "model.layers.1/residual_attn",
        "model.layers.1.post_attention_layernorm",
        "model.layers.1.mlp",
        "model.layers.1/residual_mlp",
    ]
    attn = graph.node("model.layers.1.self_attn/Attention")
    assert attn.op_type == "Attention"
    assert attn.attributes["q_num_heads"] == 4 and attn.attributes["kv_num_heads"] == 2
    assert attn.attributes["is_causal"] == 1
    cache = [graph.tensors[t] for t in attn.inputs[3:] + attn.outputs[1:]]
    assert [t.id for t in cache] == [
        "past_key_values.1.key",
        "past_key_values.1.value",
        "present.1.key",
        "present.1.value",
    ]
    assert {t.metadata["parent_id"] for t in cache} == {"model.layers.1.self_attn"}
    # every stored tensor is bound once, by its own name, and nothing was read on opening
    weights = [t for t in graph.tensors if t.kind == "weight" and "/" not in t.id]
    names = {t.id for t in weights}
    assert "model.layers.0.self_attn.q_proj.weight" in names and "lm_head.weight" in names
    assert len(names) == 2 + 2 + 2 * 9 + 1  # embed, head, 9 per layer, norm, rope caches 2
    assert not any(isinstance(t._data, np.ndarray) for t in weights if t.id.startswith("model."))


def test_longer_prompt_and_positions_past_the_cache(tmp_path: Path) -> None:
    graph = load_folder(DATA)
    assert graph is not None
    ids = np.arange(32, dtype=np.int64)[None, :] % 64
    assert _logits(graph, ids).shape == (1, 32, 64)
    with pytest.raises(RunError, match=r"position_ids must be in 0\.\.31"):
        _logits(graph, np.zeros((1, 33), dtype=np.int64))


def test_saved_as_onnx_runs_on_onnxruntime(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    from xocview.formats.onnx.writer import save

    graph = load_folder(DATA)
    assert graph is not None
    notes = save(graph, tmp_path / "tiny.onnx")
    assert any("groups" in n for n in notes)  # ONNX has no groups; the ops and weights stay
    want = np.load(DATA / "logits.npz")
    session = ort.InferenceSession(str(tmp_path / "tiny.onnx"))
    whole, step = decode_on_onnxruntime(session, graph, want["input_ids"])
    np.testing.assert_allclose(whole, want["logits"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(step[:, -1], want["logits"][:, -1], rtol=1e-3, atol=1e-4)


def test_a_decoding_step_on_the_kv_cache_equals_the_whole_prompts_last_logits() -> None:
    graph = load_folder(DATA)
    assert graph is not None
    names = [graph.tensors[i].id for i in graph.inputs]
    assert names[:3] == ["input_ids", "past_key_values.0.key", "past_key_values.0.value"]
    outs = [graph.tensors[i].id for i in graph.outputs]
    assert outs[:3] == ["logits", "present.0.key", "present.0.value"]
    attention = next(n for n in graph.nodes if n.op_type == "Attention" and n.inputs)
    assert [graph.tensors[t].id for t in attention.inputs[3:]] == names[1:3]  # mask omitted
    assert attention.metadata["omitted_inputs"] == [3]  # no mask: is_causal
    want = np.load(DATA / "logits.npz")
    whole, step = decode_on_executor(graph, want["input_ids"])
    np.testing.assert_allclose(whole, want["logits"], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(step[:, -1], want["logits"][:, -1], rtol=1e-3, atol=1e-4)


def _copy(tmp_path: Path, **changes: Any) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(DATA, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg.update(changes)
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


def test_unknown_model_type_falls_back_with_a_note(tmp_path: Path) -> None:
    folder = _copy(tmp_path, model_type="bert")
    assert load_folder(folder) is None
    assert (
        not_built(folder)
        == "model_type 'bert' has no architecture template; shown as its tensor tree"
    )
    assert not_built(DATA) is None


# rope scaling -> (model class, config class, rope_parameters beyond rope_theta); the head
# size is 16, so its 8 wavelengths run from 6.3 to 19869 positions and an original context
# of 32 puts some in each of llama3's bands (kept, blended, divided by the factor)
SCALED: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama3": (
        "LlamaForCausalLM",
        "LlamaConfig",
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0}
        | {"high_freq_factor": 4.0, "original_max_position_embeddings": 32},
    ),
    "linear": ("LlamaForCausalLM", "LlamaConfig", {"rope_type": "linear", "factor": 4.0}),
    "yarn": (
        "Qwen2ForCausalLM",
        "Qwen2Config",
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
    ),
    "yarn-mscale": (
        "LlamaForCausalLM",
        "LlamaConfig",
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 16}
        | {"beta_fast": 16.0, "beta_slow": 2.0, "mscale": 1.0, "mscale_all_dim": 0.5},
    ),
    "longrope": (
        "Phi3ForCausalLM",
        "Phi3Config",
        {"rope_type": "longrope", "original_max_position_embeddings": 32}
        | {"short_factor": [1.0, 1.1, 1.3, 1.7, 2.0, 3.0, 5.0, 8.0]}
        | {"long_factor": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]},
    ),
}
LONG_PROMPT = (np.arange(24, dtype=np.int64)[None, :] * 37 + 5) % 128


@pytest.mark.parametrize("kind", sorted(SCALED))
def test_scaled_rope_logits_equal_transformers(kind: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="torch is a bench extra, not in CI")
    transformers = pytest.importorskip("transformers", reason="transformers is a bench extra")
    torch.manual_seed(0)
    model_cls, cfg_cls, rope = SCALED[kind]
    extra: dict[str, Any] = {}
    if cfg_cls == "Phi3Config":  # its own top-level original context overrides the rope's
        extra = {"pad_token_id": 0, "original_max_position_embeddings": 32}
    cfg = getattr(transformers, cfg_cls)(
        **SIZES, **extra, rope_parameters={"rope_theta": 10000.0, **rope}
    )
    model = getattr(transformers, model_cls)(cfg)
    _save(model, tmp_path, None, False)
    with torch.no_grad():
        want = model(torch.from_numpy(LONG_PROMPT)).logits.numpy()
        plain = model.__class__(cfg.__class__(**SIZES, **extra))
        plain.load_state_dict(model.state_dict())
        unscaled = plain(torch.from_numpy(LONG_PROMPT)).logits.numpy()
    assert np.abs(unscaled - want).max() > 1e-2  # the scaling changes these logits
    graph = load_folder(tmp_path)
    assert graph is not None, not_built(tmp_path)
    assert graph.metadata["llm"]["rope_kind"] == rope["rope_type"]
    got = _logits(graph, LONG_PROMPT)
    print(f"{kind}: largest |difference| {np.abs(got - want).max():.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    if kind == "longrope":  # past the original 32 positions the long factors take over
        assert "notes" not in graph.metadata
        longer = (np.arange(40, dtype=np.int64)[None, :] * 37 + 5) % 128
        with torch.no_grad():
            want_long = model(torch.from_numpy(longer)).logits.numpy()
        got_long = _logits(graph, longer)
        print(f"longrope, 40 tokens: largest |difference| {np.abs(got_long - want_long).max():.2e}")
        np.testing.assert_allclose(got_long, want_long, rtol=1e-3, atol=1e-4)
        step = decode_on_executor(graph, longer)[1]  # the cache crosses into the long table
        np.testing.assert_allclose(step[:, -1], want_long[:, -1], rtol=1e-3, atol=1e-4)
        with pytest.raises(RunError, match=r"position_ids must be in 0\.\.95"):
            _logits(graph, np.zeros((1, 65), dtype=np.int64))


def test_rope_scaling_refused_by_name(tmp_path: Path) -> None:
    scaled = {"rope_type": "dynamic", "rope_theta": 500000.0, "factor": 8.0}
    folder = _copy(tmp_path, rope_parameters=scaled)
    assert load_folder(folder) is None
    assert "rope scaling 'dynamic' is not built" in str(not_built(folder))
    llama3 = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0}
    folder = _copy(tmp_path / "b", rope_parameters=llama3)
    assert "rope scaling 'llama3' has no low_freq_factor" in str(not_built(folder))
    folder = _copy(tmp_path / "c", rope_parameters=llama3 | {"rope_type": "linear", "factor": "8"})
    assert "rope scaling 'linear': factor is not a number" in str(not_built(folder))
    with pytest.raises(NotBuilt, match="rope scaling 'yarn' has no factor"):
        from_hf(
            {
                **json.loads((DATA / "config.json").read_text()),
                "rope_parameters": None,
                "rope_scaling": {"type": "yarn"},
            }
        )
    v4 = from_hf(
        {
            **json.loads((DATA / "config.json").read_text()),
            "rope_parameters": None,
            "rope_scaling": {"type": "linear", "factor": 2},
        }
    )
    assert (v4.rope_kind, v4.rope_scaling) == ("linear", (("factor", 2),))
    su = {"type": "su", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4}
    phi3 = {**json.loads((DATA / "config.json").read_text()), "rope_parameters": None}
    phi3 |= {"model_type": "phi3", "rope_scaling": su, "original_max_position_embeddings": 32}
    assert from_hf(phi3).rope_kind == "longrope"  # Phi-3 128k's first name for it


def test_config_readings() -> None:
    base = json.loads((DATA / "config.json").read_text())
    cfg = from_hf(base)
    assert (cfg.hidden, cfg.layers, cfg.heads, cfg.kv_heads, cfg.head_dim) == (32, 2, 4, 2, 8)
    assert (cfg.vocab, cfg.intermediate, cfg.rope_theta, cfg.eps) == (64, 48, 10000.0, 1e-5)
    v4 = {k: v for k, v in base.items() if k != "rope_parameters"} | {"rope_theta": 1e6}
    assert from_hf(v4).rope_theta == 1e6
    mistral = from_hf(base | {"model_type": "mistral", "sliding_window": 4096})
    assert (mistral.window, mistral.sliding_layers, mistral.notes) == (4096, (0, 1), ())
    qwen = base | {"model_type": "qwen2", "sliding_window": 4096, "max_window_layers": 1}
    assert from_hf(qwen).sliding_layers == ()  # use_sliding_window is off by default
    assert from_hf(qwen | {"use_sliding_window": True}).sliding_layers == (1,)
    gemma = base | {"model_type": "gemma2", "sliding_window": 8, "num_hidden_layers": 4}
    assert from_hf(gemma).sliding_layers == (0, 2)
    assert from_hf(base | {"model_type": "qwen2"}).qkv_bias
    with pytest.raises(NotBuilt, match="hidden_act 'relu'"):
        from_hf(base | {"hidden_act": "relu"})
    with pytest.raises(NotBuilt, match="num_hidden_layers 1073741824 is more than"):
        from_hf(base | {"num_hidden_layers": 1 << 30})
    with pytest.raises(NotBuilt, match="no positive hidden_size"):
        from_hf(base | {"hidden_size": -3})
    with pytest.raises(NotBuilt, match=r"no llama\.embedding_length"):
        from_gguf({"general.architecture": "llama"})
    gemma3 = base | {"model_type": "gemma3_text", "layer_types": ["sliding", "full"]}
    gemma3["rope_parameters"] = {"sliding": {"rope_theta": 1e4}, "full": {"rope_theta": 1e6}}
    assert from_hf(gemma3).layer_ropes == ((1e4, "default", ()), (1e6, "default", ()))
    gemma3["rope_parameters"]["full"] |= {"rope_type": "linear", "factor": 8.0}  # 4B and up
    assert from_hf(gemma3).rope(1) == (1e6, "linear", (("factor", 8.0),))
    del gemma3["rope_parameters"]["full"]["factor"]
    with pytest.raises(NotBuilt, match="rope scaling 'linear' has no factor"):
        from_hf(gemma3)
    # transformers 4's Gemma 3 configs: the global rope (scaled) on every sixth layer
    old = {k: v for k, v in gemma3.items() if k not in ("layer_types", "rope_parameters")}
    old |= {"num_hidden_layers": 7, "rope_theta": 1e6, "rope_local_base_freq": 1e4}
    old |= {"rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    ropes = from_hf(old).layer_ropes
    assert [i for i, r in enumerate(ropes) if r == (1e6, "linear", (("factor", 8.0),))] == [5]
    assert ropes[0] == ropes[6] == (1e4, "default", ())
    gemma2 = from_hf(base | {"model_type": "gemma2", "query_pre_attn_scalar": 256})
    assert gemma2.attn_scale == 1 / 16
    assert set(TEMPLATES) == {
        *("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text"),
        *("gpt2", "mixtral", "qwen2_moe", "qwen3_moe"),
    }
    moe = from_hf(base | {"model_type": "qwen2_moe", "num_experts": 8, "decoder_sparse_step": 2})
    assert (moe.experts, moe.dense_layers, moe.norm_topk, moe.qkv_bias) == (8, (0,), False, True)


def test_missing_tensor_and_missing_weights_are_named(tmp_path: Path) -> None:
    folder = _copy(tmp_path, num_hidden_layers=3)
    with pytest.raises(FormatError, match=r"model\.layers\.2: no tensors of layer 2; expected"):
        load_folder(folder)
    (folder / "model.safetensors").unlink()
    with pytest.raises(FormatError, match="no weights beside it"):
        load_folder(folder)
    assert "no model.safetensors" in str(not_built(folder))
    (folder / "config.json").write_text("[1, 2")
    with pytest.raises(FormatError, match="not JSON"):
        load_folder(folder / "config.json")
    with pytest.raises(FormatError, match=r"no config\.json"):
        load_folder(tmp_path)


def test_a_sliding_window_graph_saved_as_onnx_runs_on_onnxruntime(tmp_path: Path) -> None:
    """The window's boolean mask is standard ONNX: onnxruntime gives transformers' logits,
    for the prompt and for a decoding step on the cache."""
    torch = pytest.importorskip("torch", reason="torch is a bench extra, not in CI")
    transformers = pytest.importorskip("transformers", reason="transformers is a bench extra")
    ort = pytest.importorskip("onnxruntime")
    from xocview.formats.onnx.writer import save

    torch.manual_seed(0)
    model = transformers.MistralForCausalLM(transformers.MistralConfig(**SIZES, sliding_window=3))
    want = _save(model, tmp_path, None, False)
    graph = load_folder(tmp_path)
    assert graph is not None
    save(graph, tmp_path / "m.onnx")
    session = ort.InferenceSession(str(tmp_path / "m.onnx"))
    whole, step = decode_on_onnxruntime(session, graph, PROMPT)
    np.testing.assert_allclose(whole, want, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(step[:, -1], want[:, -1], rtol=1e-3, atol=1e-4)


def test_a_transformers_4_gemma3_config_builds_its_per_layer_rope(tmp_path: Path) -> None:
    """Gemma 3 checkpoints on the hub were saved by transformers 4: one rope_theta with its
    rope_scaling for the full layers, rope_local_base_freq for the sliding ones, and no
    layer_types. Read so, the graph gives transformers' logits (which converts them alike)."""
    torch = pytest.importorskip("torch", reason="torch is a bench extra, not in CI")
    transformers = pytest.importorskip("transformers", reason="transformers is a bench extra")
    torch.manual_seed(0)
    sizes = SIZES | {"num_hidden_layers": 7, "head_dim": 16, "sliding_window": 3}
    old_style = sizes | {"model_type": "gemma3_text", "query_pre_attn_scalar": 16}
    old_style |= {"rope_theta": 1e6, "rope_local_base_freq": 1e4, "sliding_window_pattern": 6}
    old_style |= {"rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    cfg = transformers.Gemma3TextConfig.from_dict(old_style)
    assert cfg.layer_types[5] == "full_attention" and cfg.layer_types[4] == "sliding_attention"
    want = _save(transformers.Gemma3ForCausalLM(cfg), tmp_path, None, False)
    (tmp_path / "config.json").write_text(json.dumps(old_style))  # as the hub has it
    graph = load_folder(tmp_path)
    assert graph is not None
    got = _logits(graph, PROMPT)
    print(f"gemma3, transformers 4 config: largest |difference| {np.abs(got - want).max():.2e}")
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
