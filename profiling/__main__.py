"""`python -m memlens`: the memlens command."""

import sys

from memlens.cli import console_main

sys.exit(console_main())
