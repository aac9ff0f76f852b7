"""The checkpoint a resumed training run starts from: the newest *complete* one.

The Hugging Face Trainer saves a checkpoint file by file into `checkpoint-N/` (weights, optimizer,
scheduler, RNG states) and writes `trainer_state.json` last (`Trainer._save_checkpoint`,
transformers 5.24), without a temporary name. A process killed, or a disk filled, in the middle
of a save leaves a `checkpoint-N/` that looks newest but cannot be resumed (the Trainer fails on
its missing state file every time). So a checkpoint counts only when its state file reads as
JSON; the others are removed, with a log line, before training resumes. Used by DPO
(`alignment.dpo.train`) and ReasonBench SFT (`alignment.reasonbench.experiments.sft`).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

STATE_FILE = "trainer_state.json"  # transformers.trainer.TRAINER_STATE_NAME
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def is_complete(path: Path) -> bool:
    """The Trainer finished saving `path`: its last file, the trainer state, is whole JSON."""
    try:
        json.loads((path / STATE_FILE).read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return True


def complete_checkpoint(folder: Path, remove: bool = True, log: Callable[[str], None] | None = None) -> Path | None:
    """The newest complete `checkpoint-N` in `folder` (None without one). Incomplete ones are
    removed when `remove` (the main process of a multi-process run only), each with a log line.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> for n, state in ((2, "{}"), (4, '{"glob')):
    ...     (d / f"checkpoint-{n}").mkdir(); _ = (d / f"checkpoint-{n}" / STATE_FILE).write_text(state)
    >>> complete_checkpoint(d, log=print).name  # doctest: +ELLIPSIS
    checkpoint .../checkpoint-4 is incomplete (killed or out of space while saving): removed
    'checkpoint-2'
    >>> sorted(p.name for p in d.iterdir())
    ['checkpoint-2']
    """
    if log is None:
        from alignment.runtime.console import detail as log
    folder = Path(folder)
    if not folder.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in folder.iterdir() if p.is_dir() and (m := CHECKPOINT.match(p.name))),
                   reverse=True)
    newest = None
    for _, path in found:
        if is_complete(path):
            newest = newest or path
        elif remove:
            shutil.rmtree(path, ignore_errors=True)
            log(f"checkpoint {path} is incomplete (killed or out of space while saving): removed")
    return newest
