"""Makes the generative-model files of tests/executor/test_contrib_genai.py (run by hand;
torch, transformers and onnxruntime-genai are not in the test extra):

    .venv/bin/pip install onnxruntime-genai   # into .venv only
    HF_HUB_OFFLINE=1 .venv/bin/python tests/data/genai/make_genai_models.py

Tiny seeded Hugging Face causal LMs (hidden 32, 2 layers, 4 heads over 2 KV heads of size 16,
Phi-3 2 over 1; a vocabulary of 128 and a word-level tokenizer) are built from config objects,
saved by ``save_pretrained`` into a temporary folder and converted by onnxruntime-genai's model
builder (``python -m onnxruntime_genai.models.builder -i FOLDER -o OUT -p PRECISION -e EP``),
nothing downloaded. Head size 16: onnxruntime's CPU GroupQueryAttention needs a multiple of 16.

The builder always writes its weights to ``model.onnx.data`` (it has no option to keep them
inside); each model is read back and saved whole as ``<folder>/model.onnx``, nothing else kept.
int4 and int8 give MatMulNBits (accuracy_level 4), the tied-embedding models built with
``shared_embeddings=true`` GatherBlockQuantized, Gemma 2 a window-sized cache
(sliding_window_cache), and the DirectML fp16 target RotaryEmbedding nodes before
GroupQueryAttention. onnxruntime-genai 0.18 refuses Gemma 3 under transformers 5 (it reads a
flat ``rope_parameters["rope_type"]``; Gemma3TextConfig nests one per layer type): the script
reports that and goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import torch

HERE = Path(__file__).parent
SIZES: dict[str, Any] = {
    "vocab_size": 128,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "max_position_embeddings": 64,
}


def _llama() -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**SIZES, tie_word_embeddings=False))


def _qwen3() -> Any:
    """Qwen3 normalises Q and K per head (RMSNorm) before the rotary embedding."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    return Qwen3ForCausalLM(Qwen3Config(**SIZES, tie_word_embeddings=True))


def _phi3() -> Any:
    from transformers import Phi3Config, Phi3ForCausalLM

    sizes = {k: v for k, v in SIZES.items() if k != "head_dim"}  # hidden / heads
    config = Phi3Config(
        **{**sizes, "num_attention_heads": 2, "num_key_value_heads": 1},
        original_max_position_embeddings=SIZES["max_position_embeddings"],
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    return Phi3ForCausalLM(config)


def _gemma2() -> Any:
    """Gemma 2: logit and attention softcaps, a sliding window on every other layer, embeddings
    scaled by sqrt(hidden), RMSNorm weights stored as w - 1."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    config = Gemma2Config(
        **SIZES,
        sliding_window=4,
        query_pre_attn_scalar=8,
        tie_word_embeddings=True,
    )
    return Gemma2ForCausalLM(config)


def _gemma3() -> Any:
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(
        **SIZES,
        sliding_window=4,
        query_pre_attn_scalar=8,
        tie_word_embeddings=True,
    )
    return Gemma3ForCausalLM(config)


ARCHS: dict[str, Callable[[], Any]] = {
    "llama": _llama,
    "qwen3": _qwen3,
    "phi3": _phi3,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
}
# (folder, architecture, precision, execution provider, extra builder options)
BUILDS: list[tuple[str, str, str, str, list[str]]] = [
    *((f"{a}_fp32", a, "fp32", "cpu", []) for a in ARCHS),
    ("llama_int4", "llama", "int4", "cpu", []),
    ("llama_int8", "llama", "int8", "cpu", []),
    ("phi3_int4", "phi3", "int4", "cpu", []),
    ("qwen3_int4", "qwen3", "int4", "cpu", ["shared_embeddings=true"]),
    ("gemma2_int4", "gemma2", "int4", "cpu", ["shared_embeddings=true"]),
    ("gemma3_int4", "gemma3", "int4", "cpu", ["shared_embeddings=true"]),
    ("llama_dml_fp16", "llama", "fp16", "dml", []),
]


def _save_hf(make: Callable[[], Any], folder: Path, seed: int) -> None:
    """The seeded model, and a word-level tokenizer of its vocabulary (the builder reads one)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    torch.manual_seed(seed)
    model = make()
    model.save_pretrained(str(folder))
    vocab = {f"t{i}": i for i in range(SIZES["vocab_size"])}
    words = Tokenizer(models.WordLevel(vocab, unk_token="t0"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=words, unk_token="t0", bos_token="t1", eos_token="t2", pad_token="t0"
    )
    tokenizer.save_pretrained(str(folder))


def _build(hf: Path, out: Path, precision: str, ep: str, extra: list[str]) -> None:
    command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf)]
    command += ["-o", str(out), "-p", precision, "-e", ep, "-c", str(out.parent / "cache")]
    if extra:
        command += ["--extra_options", *extra]
    # GIT_DIR: the builder stamps producer_version with ``git rev-parse HEAD`` run beside its
    # installed files, which inside a venv in a repository is that repository's commit
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GIT_DIR": os.devnull}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = "\n".join(done.stderr.splitlines()[-5:])
        raise RuntimeError(f"builder refused {out.name}:\n{tail}")


def _keep(built: Path, target: Path) -> None:
    """The builder's model with its external weights moved inside one file."""
    model = onnx.load(str(built / "model.onnx"), load_external_data=True)
    target.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target / "model.onnx"), save_as_external_data=False)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for seed, (name, make) in enumerate(ARCHS.items()):
            _save_hf(make, work / f"hf_{name}", seed)
        for folder, arch, precision, ep, extra in BUILDS:
            out = work / folder
            try:
                _build(work / f"hf_{arch}", out, precision, ep, extra)
            except RuntimeError as refused:
                print(refused)
                continue
            _keep(out, HERE / folder)
    for path in sorted(HERE.glob("*/model.onnx")):
        model = onnx.load(str(path))
        ops = sorted({n.op_type for n in model.graph.node if n.domain == "com.microsoft"})
        print(f"{path.parent.name}: {path.stat().st_size} bytes; {', '.join(ops)}")


if __name__ == "__main__":
    main()
