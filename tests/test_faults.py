"""Faults a user's machine produces, injected at every write of a tiny `alignment run`.

The way SQLite tests I/O errors: a Python audit hook sees every file the run opens for writing
under its run dir (Python's `open`/`os.open`: stage data, manifests, shards, the log, the lock,
checkpoint and adapter files the libraries write through Python) and makes the k-th one fail
with ENOSPC, or stops the process there (`os._exit`, no cleanup, like a kill). Each faulted run
is a forked child of this process (`alignment.cli.main`, exactly as the command line runs it);
then the same command, without faults, must finish with the rows of an uninterrupted run, and
the fault must have cost one line on stderr with exit status 74.

`make test` draws a seeded sample of k; `ALIGNMENT_FAULT_SWEEP=1` runs every k (slow). Damaged
stage files (cut short, flipped bytes) are the other half: never reused, recomputed with a line
naming the file.
"""

from __future__ import annotations

import errno
import json
import os
import random
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_crash import artifacts, private_tqdm_lock, tiny_config, wait

from alignment.cli import main
from alignment.faults import EX_IOERR
from alignment.status import status
from alignment.store import RunDir

SEED = 55
SAMPLE = 2  # k drawn per fault kind in `make test`
KILLED = 137
SWEEP = os.environ.get("ALIGNMENT_FAULT_SWEEP") == "1"


class WriteFaults:
    """Counts opens for writing under `root`; the `k`-th fails with ENOSPC or exits the process."""

    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def __init__(self) -> None:
        self.root: str | None = None
        self.k = 0
        self.kind = "count"
        self.count = 0
        self.paths: list[str] = []

    def arm(self, root: Path, k: int = 0, kind: str = "count") -> None:
        self.root, self.k, self.kind, self.count, self.paths = str(root) + os.sep, k, kind, 0, []

    def hook(self, event: str, args: tuple) -> None:
        if event != "open" or self.root is None:
            return
        path, mode, flags = args
        if not isinstance(path, str | bytes | os.PathLike):
            return  # a file descriptor
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & self.WRITE_FLAGS)
        path = os.path.abspath(os.fsdecode(path))
        if not writes or not path.startswith(self.root):
            return
        self.count += 1
        self.paths.append(path)
        if self.count == self.k:
            if self.kind == "kill":
                os._exit(KILLED)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)


FAULTS = WriteFaults()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, tiny_llama_dir: Path) -> tuple[Path, Path, list[str]]:
    """(config, uninterrupted run dir, the paths it opened for writing, in order)."""
    sys.addaudithook(FAULTS.hook)  # cannot be removed; disarmed (root None) outside these runs
    base = tmp_path_factory.mktemp("faults")
    cfg = tiny_config(base / "faults.yaml", tiny_llama_dir)
    ref = base / "ref"
    FAULTS.arm(ref)
    try:
        assert main(["run", str(cfg), "--out", str(ref), "--quiet"]) == 0
    finally:
        FAULTS.root = None
    return cfg, ref, list(FAULTS.paths)


def run_child(argv: list[str], root: Path, k: int, kind: str, stderr: Path) -> int:
    """`alignment <argv>` in a forked child with the k-th write under `root` faulted."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            private_tqdm_lock()
            err = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(err, 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            FAULTS.arm(root, k, kind)
            code = main(argv)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    code = wait(pid, 900)
    assert code is not None, "the faulted run hung"
    return code


def equal_rows(ref: Path, out: Path) -> None:
    want, got = artifacts(ref), artifacts(out)
    assert set(got) == set(want)
    for name, df in want.items():
        pd.testing.assert_frame_equal(got[name], df, obj=name)


def fault_then_resume(reference: tuple[Path, Path, list[str]], tmp_path: Path, k: int, kind: str) -> int:
    """Fault the k-th write of a fresh run, resume it; returns the faulted run's exit code."""
    cfg, ref, paths = reference
    out = tmp_path / f"{kind}-{k}"
    argv = ["run", str(cfg), "--out", str(out), "--quiet"]
    code = run_child(argv, out, k, kind, tmp_path / "stderr")
    lines = (tmp_path / "stderr").read_text().splitlines()
    where = f"write {k} of {len(paths)} ({paths[k - 1]})"
    if kind == "kill":
        assert code == KILLED and lines == [], (where, lines)
    else:  # a write whose failure the run rides over (a best-effort cache) may still exit 0
        assert (code, lines) == (0, []) or (code == EX_IOERR and len(lines) == 1), (where, code, lines)
        if code == EX_IOERR:
            assert lines[0].startswith("alignment: error: no space left on the device holding "), lines
            assert "rerun the same command to resume" in lines[0]
    assert run_child(argv, out, 0, "count", tmp_path / "stderr") == 0, (where, (tmp_path / "stderr").read_text())
    equal_rows(ref, out)
    assert all(r["state"] in ("done", "off") for r in status(out)), where
    print(where, code, lines)
    return code


def sample(n_writes: int, kind: str) -> list[int]:
    if SWEEP:
        return list(range(1, n_writes + 1))
    return sorted(random.Random(f"{SEED}-{kind}").sample(range(1, n_writes + 1), SAMPLE))


@pytest.mark.parametrize("kind", ["enospc", "kill"])
def test_a_fault_at_sampled_writes_then_the_same_command_resumes(reference, tmp_path: Path, kind: str) -> None:
    n = len(reference[2])
    assert n >= 30, reference[2]  # every stage writes: data, manifests, shards
    codes = [fault_then_resume(reference, tmp_path, k, kind) for k in sample(n, kind)]
    assert EX_IOERR in codes or kind == "kill", codes  # the sample's faults did stop the run


@pytest.mark.slow
@pytest.mark.skipif(not SWEEP, reason="the full sweep of every write: set ALIGNMENT_FAULT_SWEEP=1")
@pytest.mark.parametrize("kind", ["enospc", "kill"])
def test_a_fault_at_every_write_then_the_same_command_resumes(reference, tmp_path: Path, kind: str) -> None:
    codes = [fault_then_resume(reference, tmp_path, k, kind) for k in range(1, len(reference[2]) + 1)]
    print(kind, "exit codes", {c: codes.count(c) for c in set(codes)})


def test_the_written_paths_cover_every_kind_of_write(reference) -> None:
    """The sample is drawn from all of them: stage data, manifests, shards, the log, the lock.
    (This config trains no DPO policy; checkpoint saves cut short are tests/test_checkpoints.py's.)"""
    _, ref, paths = reference
    rel = [os.path.relpath(p, ref) for p in paths]
    for needle in ("build/", "generate/shards/", "manifest.json", "dpo-train/", "logs/run-", "report.html",
                   "config.yaml", ".lock"):
        assert any(needle in r for r in rel), needle
