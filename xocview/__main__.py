"""``python -m xocview`` is the ``xocview`` command."""

import sys

from xocview.cli import main

sys.exit(main())
