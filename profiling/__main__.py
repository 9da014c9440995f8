"""`python -m memlens`: the memlens command."""

import sys

from memlens.cli import main

sys.exit(main())
