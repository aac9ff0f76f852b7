"""`alignment <command> ...`: the command line. Each subcommand is a thin wrapper over a function.

Every command module listed in `COMMANDS` exposes `register(subparsers)`, which adds its parser
and sets `func(args) -> int`. A `UserError` anywhere becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from alignment.errors import UserError
from alignment.version import __version__

COMMANDS = [
    "alignment.commands",
    "alignment.judge.cli",
    "alignment.reasonbench.cli",
    "alignment.bench",
    "alignment.compare",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="alignment",
        description="Which declared feature of the input caused this answer, "
        "and does the explanation admit it?",
    )
    parser.add_argument("--version", action="version", version=f"alignment {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Quieter third-party logs; our own progress goes through tqdm.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # datasets' own bars ("Generating train split", "Creating parquet") would precede a one-line
    # error on stderr; our loops have their own bars (silenced by --quiet).
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except UserError as e:
        print(f"alignment: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("alignment: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
