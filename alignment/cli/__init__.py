"""`alignment <command> ...`: the command line. Each subcommand is a thin wrapper over a function.

Every command module listed in `COMMANDS` exposes `register(subparsers)`, which adds its parser
and sets `func(args) -> int`. A `UserError` anywhere becomes one line on stderr and exit 2; so
does an argparse usage error. A full disk or an unwritable folder (`alignment.disk.faults`) is one line
naming the path, exit 74 or 73. Anything else is a bug: one line naming a log file that holds the
traceback, exit 1.

Threads: `--threads N` sets torch's intra-op threads; without it `OMP_NUM_THREADS` is respected,
else min(cores, 4) and, because neither pinned them, `alignment.runtime.threads` lowers them while other
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

import alignment.runtime.threads as threads
from alignment.disk.faults import fault_line, fault_of
from alignment.errors import UserError
from alignment.runtime.console import end_progress, last_log
from alignment.version import __version__

COMMANDS = [
    "alignment.cli.pipeline",
    "alignment.cli.judge",
    "alignment.cli.reasonbench",
    "alignment.cli.bench",
    "alignment.cli.compare",
    "alignment.cli.sweep",
    "alignment.cli.status",
    "alignment.cli.results",
]
# `alignment --help` lists the commands in pipeline order: set up (config, organisms), run (whole,
# or stage by stage, as registered), then read the results; the benchmark tools last.
BEFORE_RUN = ("config", "organism")
AFTER_RUN = ("status", "judge", "compare", "sweep", "results", "reasonbench", "bench")


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (`alignment: error: ...`), exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        first = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {first} (see `{self.prog} --help`)\n")


class CommandListFormatter(argparse.HelpFormatter):
    """Each subcommand on one line of `alignment --help`: argparse wraps their help to the
    terminal and, measuring names one indent short, puts the longest name on a line of its own."""

    def _format_action(self, action: argparse.Action) -> str:
        if type(action).__name__ != "_ChoicesPseudoAction":  # not one subcommand's line
            return super()._format_action(action)
        saved = self._width, self._action_max_length, self._max_help_position
        self._width, self._action_max_length = 1 << 16, self._action_max_length + self._indent_increment
        self._max_help_position = max(self._max_help_position, self._action_max_length + 2)
        try:
            return super()._format_action(action)
        finally:
            self._width, self._action_max_length, self._max_help_position = saved


def pipeline_rank(name: str, registered: int) -> tuple[int, int]:
    """Sort key of a subcommand in `alignment --help`.

    >>> sorted(["bench", "run", "build", "config"], key=lambda n: pipeline_rank(n, 0))
    ['config', 'run', 'build', 'bench']
    """
    if name in BEFORE_RUN:
        return 0, BEFORE_RUN.index(name)
    if name in AFTER_RUN:
        return 2, AFTER_RUN.index(name)
    return 1, registered


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="alignment",
        description="Which declared feature of the input caused this answer, "
        "and does the explanation admit it?",
        formatter_class=CommandListFormatter,
    )
    parser.add_argument("--version", action="version", version=f"alignment {__version__}")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="torch CPU threads (default: $OMP_NUM_THREADS, else min(cores, 4), lowered while other processes keep cores busy)")  # fmt: skip
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for name in COMMANDS:
        importlib.import_module(name).register(sub)
    lines = sub._choices_actions  # the --help lines, in registration order
    lines[:] = [a for _, a in sorted(enumerate(lines), key=lambda ia: pipeline_rank(ia[1].dest, ia[0]))]
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
    last_log.update(path=None, saved=True)
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
        if (fault := fault_of(e)) is not None:  # the machine's, not a bug: say what and where
            print(fault_line(fault, last_log["path"], last_log["saved"]), file=sys.stderr)
            return fault.exit_code
        print(f"alignment: internal error ({type(e).__name__}: {_one_line(e)[:200]}); "
              f"traceback in {crash_log(e)}", file=sys.stderr)
        return 1
    return int(code or 0)

