"""A quiet console for `alignment run`: one line per stage, one progress bar per long loop.

Everything else (stage details, trainer loss dictionaries, library warnings and log records,
tracebacks) goes to `runs/<name>/logs/run-<time>.log`; `--verbose` also shows it live on stderr.
Outside `run_log` (a stage called from Python) details print as before.
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import alignment.runtime.threads as threads
from alignment.disk.faults import writing

LOG = logging.getLogger("alignment")
_state = {"active": False, "verbose": False, "quiet": False}
# The last run log of this process: its path, and whether every record reached it (a full disk
# can hold the log file too); the CLI names it in a machine fault's one line.
last_log: dict[str, Any] = {"path": None, "saved": True}


class RunLogHandler(logging.FileHandler):
    """A log file that fails quietly: logging's own handler prints "--- Logging error ---" and
    a traceback per record it cannot write; this one remembers that the log is incomplete."""

    def handleError(self, record: logging.LogRecord) -> None:
        last_log["saved"] = False

    def flush(self) -> None:
        try:
            super().flush()
        except OSError:
            last_log["saved"] = False

    def close(self) -> None:
        try:  # closing flushes what is buffered once more
            super().close()
        except OSError:
            last_log["saved"] = False


def stage_line(message: str) -> None:
    """A line the console always shows (unless --quiet); also recorded in the run log."""
    LOG.info(message)
    if not _state["quiet"] and not (_state["active"] and _state["verbose"]):  # verbose: the handler shows it
        print(message, flush=True)


def detail(message: str) -> None:
    """A stage's own detail line: the run log only, or the console outside a logged run."""
    if _state["active"]:
        LOG.info(message)
    elif not _state["quiet"]:
        print(message, flush=True)


def quiet() -> bool:
    """Whether the command running now was given --quiet (set by `run_log`): for progress a
    library draws on its own, which no `quiet` argument reaches."""
    return bool(_state["quiet"])


def end_progress() -> None:
    """Close every open progress bar, so that what is printed next (an error) starts a line of
    its own: a loop left by an exception keeps its bar open, cursor after it, until collected."""
    std = sys.modules.get("tqdm.std")
    if std is None:  # no bar was ever made
        return
    for bar in list(getattr(std.tqdm, "_instances", ())):
        try:
            bar.close()
        except Exception:  # a bar on a closed stream: nothing left to end
            pass


LIBRARIES = ("transformers", "datasets", "accelerate", "peft", "trl", "torch")


@contextmanager
def _library_loggers() -> Iterator[None]:
    """Libraries log through their own stderr handlers: send their records to ours instead, and
    put everything back afterwards."""
    import datasets  # noqa: F401  (configures its logger, so the handlers below exist)
    import transformers  # noqa: F401

    saved = []
    for name in LIBRARIES:
        lib = logging.getLogger(name)
        own = [h for h in lib.handlers if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)]
        saved.append((lib, own, lib.level, lib.propagate))
        for h in own:
            lib.removeHandler(h)
        lib.setLevel(logging.WARNING)
        lib.propagate = True
    try:
        yield
    finally:
        for lib, own, level, propagate in saved:
            for h in own:
                lib.addHandler(h)
            lib.setLevel(level)
            lib.propagate = propagate


@contextmanager
def run_log(run_dir: Path, verbose: bool = False, quiet: bool = False) -> Iterator[Path]:
    """Route logs, warnings and library output of one command into a log file under the run dir."""
    folder = Path(run_dir) / "logs"
    path = folder / f"run-{time.strftime('%Y%m%d-%H%M%S')}.log"
    with writing(path):
        folder.mkdir(parents=True, exist_ok=True)
        handlers: list[logging.Handler] = [RunLogHandler(path, encoding="utf-8")]
    last_log.update(path=str(path), saved=True)
    root = logging.getLogger()
    handlers[0].setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    if verbose:
        handlers.append(logging.StreamHandler(sys.stderr))
    old_level, old_state = root.level, dict(_state)
    root.setLevel(logging.INFO)
    for h in handlers:
        root.addHandler(h)
    _state.update(active=True, verbose=verbose, quiet=quiet)
    logging.captureWarnings(True)
    try:
        with _library_loggers(), warnings.catch_warnings():
            warnings.simplefilter("default")  # once per location, into the log instead of the console
            yield path
    except Exception:
        LOG.exception("command failed")
        raise
    finally:
        logging.captureWarnings(False)
        for h in handlers:
            root.removeHandler(h)
            h.close()
        root.setLevel(old_level)
        _state.update(old_state)


def quiet_trainer(trainer: Any, quiet: bool | None = None) -> Any:
    """Replace the trainer's printing callbacks: loss dictionaries go to the log, the console
    keeps one step progress bar (none when quiet)."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback, TrainerCallback

    class LogCallback(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            threads.tick()

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            if state.is_local_process_zero and logs:
                LOG.info("trainer step %s: %s", state.global_step, logs)

    class BarOnly(ProgressCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kw: Any) -> None:
            pass  # the stock callback writes every log dict through the bar

    trainer.remove_callback(PrinterCallback)
    trainer.remove_callback(ProgressCallback)
    trainer.add_callback(LogCallback())
    if not (_state["quiet"] if quiet is None else quiet):
        trainer.add_callback(BarOnly())
    return trainer
