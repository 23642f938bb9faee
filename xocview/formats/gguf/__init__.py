"""GGUF (llama.cpp, Ollama, LM Studio): metadata, tokenizer summary and every tensor with its
GGML type, read from a memory map by a reader of our own; quantized blocks dequantized on
demand."""

from xocview.formats.gguf.reader import EXPANDS_DOTTED_KEYS, EXTENSIONS, NAME, load, sniff

__all__ = ["EXPANDS_DOTTED_KEYS", "EXTENSIONS", "NAME", "load", "sniff"]
