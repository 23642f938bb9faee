"""``python -m xocview`` is the ``xocview`` command."""

import multiprocessing
import sys

from xocview.cli import main

# In the packaged (frozen) program, the fork server that reads ONNX files for the window is this
# executable started again: freeze_support() runs it as such instead of as the command line.
multiprocessing.freeze_support()
sys.exit(main())
