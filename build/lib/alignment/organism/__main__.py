"""`python -m alignment.organism NAME...` (same as `alignment organism train NAME...`)."""

from __future__ import annotations

import sys

from alignment.cli import main

if __name__ == "__main__":
    sys.exit(main(["organism", "train", *sys.argv[1:]]))
