"""`python -m alignment ...`, the same as the `alignment` console script."""

from __future__ import annotations

import sys

from alignment.cli import main

if __name__ == "__main__":
    sys.exit(main())
