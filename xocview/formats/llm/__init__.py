"""Decoder-only LLMs (Llama, Mistral, Mixtral, Qwen2/3 and their MoE, Phi-3, Gemma 1/2/3,
GPT-2) drawn as their forward pass from a config and their stored weights: standard ONNX
operators the executor runs."""

from xocview.formats.llm.build import OPSET, build_graph
from xocview.formats.llm.config import LlmConfig, NotBuilt
from xocview.formats.llm.folder import config_path, load_folder, not_built, weights_path
from xocview.formats.llm.gguf_config import from_gguf
from xocview.formats.llm.hf_config import from_hf
from xocview.formats.llm.templates import TEMPLATES, Template

__all__ = [
    "OPSET",
    "TEMPLATES",
    "LlmConfig",
    "NotBuilt",
    "Template",
    "build_graph",
    "config_path",
    "from_gguf",
    "from_hf",
    "load_folder",
    "not_built",
    "weights_path",
]
