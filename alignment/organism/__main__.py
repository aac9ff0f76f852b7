"""`python -m alignment.organism NAME...`: train (or find cached) organisms and print their folders."""

from __future__ import annotations

import sys

from alignment.organism import RECIPES, ensure_model

if __name__ == "__main__":
    for name in sys.argv[1:] or sorted(RECIPES):
        print(name, ensure_model(name))
