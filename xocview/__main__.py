"""``python -m xocview`` is the ``xocview`` command."""

import multiprocessing
import sys

if __name__ == "__main__":
    # In the packaged (frozen) program, the fork server that reads ONNX files for the window is
    # this executable started again: freeze_support() runs it as such, before anything else.
    multiprocessing.freeze_support()
    from xocview.cli import main

    sys.exit(main())
