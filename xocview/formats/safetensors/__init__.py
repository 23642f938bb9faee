"""safetensors (Hugging Face's weights format): single files and sharded checkpoints, read
from their headers, values memory-mapped on first use."""

from xocview.formats.safetensors.reader import EXTENSIONS, NAME, load, sniff

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]
