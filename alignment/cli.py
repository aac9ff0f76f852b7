"""`alignment <command> ...`: the command line. Each subcommand is a thin wrapper over a function.

Every command module listed in `COMMANDS` exposes `register(subparsers)`, which adds its parser
and sets `func(args) -> int`. A `UserError` anywhere becomes one line on stderr and exit 2; so
does an argparse usage error. Anything else is a bug: one line naming a log file that holds the
traceback, exit 1.

Threads: `--threads N` sets torch's intra-op threads; without it `OMP_NUM_THREADS` is respected,
else min(cores, 4) and, because neither pinned them, `alignment.threads` lowers them while other
processes keep cores busy: OpenMP threads spin-waiting for a parked core slow a run far more
than its fair share (`alignment bench` measures the contention case).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import traceback
from typing import NoReturn

import alignment.threads as threads
from alignment.console import end_progress
from alignment.errors import UserError
from alignment.version import __version__

COMMANDS = [
    "alignment.commands",
    "alignment.judge.cli",
    "alignment.reasonbench.cli",
    "alignment.bench",
    "alignment.compare",
    "alignment.sweep",
]


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (`alignment: error: ...`), exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        first = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {first} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="alignment",
        description="Which declared feature of the input caused this answer, "
        "and does the explanation admit it?",
    )
    parser.add_argument("--version", action="version", version=f"alignment {__version__}")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="torch CPU threads (default: $OMP_NUM_THREADS, else min(cores, 4), lowered while other processes keep cores busy)")  # fmt: skip
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    return parser


def crash_log(exc: BaseException) -> str:
    """Write the traceback of an unexpected error to a log file; return its path."""
    folder = os.environ.get("ALIGNMENT_LOG_DIR") or tempfile.gettempdir()
    try:
        os.makedirs(folder, exist_ok=True)
        fd, path = tempfile.mkstemp(prefix=f"alignment-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(f"alignment {__version__}\nargv: {sys.argv!r}\n\n")
            f.write("".join(traceback.format_exception(exc)))
    except OSError:
        return "(no log: could not write one)"
    return path


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: list[str] | None = None) -> int:
    # Quieter third-party logs; our own progress goes through tqdm.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # datasets' own bars ("Generating train split", "Creating parquet") would precede a one-line
    # error on stderr; our loops have their own bars (silenced by --quiet).
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version and usage errors print their own text
        return int(e.code or 0) if isinstance(e.code, int) or e.code is None else 2
    try:
        threads.configure(args.threads)
        code = args.func(args)
    except UserError as e:
        end_progress()  # the error starts its own line, not the end of a bar's
        print(f"alignment: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        end_progress()
        print("alignment: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `alignment ... | head`: the reader left; nothing to report
        return 1
    except Exception as e:  # a bug: keep the traceback, show one line
        end_progress()
        print(f"alignment: internal error ({type(e).__name__}: {_one_line(e)[:200]}); "
              f"traceback in {crash_log(e)}", file=sys.stderr)
        return 1
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
