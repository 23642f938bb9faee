"""safetensors (Hugging Face's weights format): single files and sharded checkpoints, read
from their headers, values memory-mapped on first use."""

from xocview.formats.safetensors.reader import EXPANDS_DOTTED_KEYS, EXTENSIONS, NAME, load, sniff

__all__ = ["EXPANDS_DOTTED_KEYS", "EXTENSIONS", "NAME", "load", "sniff"]
