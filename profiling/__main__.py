import sys

from memlens.cli import main

sys.exit(main())
