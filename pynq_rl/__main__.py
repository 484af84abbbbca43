"""``python -m pynq_rl``: the ``pynq-rl`` command line."""

import sys

from .cli import main

sys.exit(main())
