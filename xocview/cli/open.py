"""``xocview open`` (the default command): the viewer; Qt is imported only here, when asked."""

from __future__ import annotations

import argparse
import os
import sys

from xocview.cli.exit_codes import EXIT_FINDINGS

__all__ = ["add_open_parser", "cmd_open"]


def add_open_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("files", nargs="*", metavar="FILE")
    sp.add_argument(
        "--new-window",
        action="store_true",
        help="open a window of its own instead of a tab in the running xocview",
    )
    # what xocview.show starts a window with (ui/show_client.py): not for typing
    sp.add_argument("--show-name", help=argparse.SUPPRESS)
    sp.add_argument("--watch", action="store_true", help=argparse.SUPPRESS)
    sp.add_argument("--colour", help=argparse.SUPPRESS)
    sp.add_argument("--compare", action="store_true", help=argparse.SUPPRESS)


def cmd_open(ns: argparse.Namespace) -> int:
    """The viewer, one tab per file; a file that fails shows its message, the rest open."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
    ):
        print(
            "xocview: error: no display to open a window on; use `xocview info FILE` or "
            "`xocview render FILE OUT.png`",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    from xocview.ui.app import run_gui  # Qt only when a window is wanted

    return run_gui(
        ns.files,
        new_window=ns.new_window,
        show_name=ns.show_name,
        watch=ns.watch,
        colour=ns.colour,
        compare=ns.compare,
    )
