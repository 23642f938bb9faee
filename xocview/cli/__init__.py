"""The command line: argparse, one module per command family; the GUI only when asked for."""

from xocview.cli.app import main

__all__ = ["main"]
