"""Faults a user's machine produces, injected at every write of a tiny `alignment run`.

The way SQLite tests I/O errors: a Python audit hook sees every file the run opens for writing
under its run dir (Python's `open`/`os.open`: stage data, manifests, shards, the log, the lock,
checkpoint and adapter files the libraries write through Python) and makes the k-th one fail
with ENOSPC, or stops the process there (`os._exit`, no cleanup, like a kill). Each faulted run
is a forked child of this process (`alignment.cli.main`, exactly as the command line runs it);
then the same command, without faults, must finish with the rows of an uninterrupted run, and
the fault must have cost one line on stderr with exit status 74.

`make test` draws a seeded sample of k; `ALIGNMENT_FAULT_SWEEP=1` runs every k (slow: a run and
its resume per k), `ALIGNMENT_FAULT_SWEEP=40-80` a range of them. Damaged
stage files (cut short, flipped bytes) are the other half: never reused, recomputed with a line
naming the file.
"""

from __future__ import annotations

import errno
import os
import random
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_crash import artifacts, private_tqdm_lock, wait
from write_faults import FAULTS, KILLED

from alignment.cli import main
from alignment.cli.status import status
from alignment.disk.faults import EX_CANTCREAT, EX_IOERR

SEED = 55
SAMPLE = 2  # k drawn per fault kind in `make test`
# "1": every write; "A-B": writes A to B only (a sweep split across machines).
SWEEP = os.environ.get("ALIGNMENT_FAULT_SWEEP", "")


def run_child(argv: list[str], root: Path, k: int, kind: str, stderr: Path, setup=None) -> int:
    """`alignment <argv>` in a forked child with the k-th write under `root` faulted (`setup`,
    if given, is called in the child first)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            private_tqdm_lock()
            os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115  (pytest's capture is not fd 1/2)
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
            if setup is not None:
                setup()
            FAULTS.arm(root, k, kind)
            code = main(argv)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stderr.flush()
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
    return sorted(random.Random(f"{SEED}-{kind}").sample(range(1, n_writes + 1), SAMPLE))


def sweep(n_writes: int) -> list[int]:
    """Every k, or the range $ALIGNMENT_FAULT_SWEEP names."""
    first, _, last = SWEEP.partition("-")
    return list(range(int(first), min(int(last), n_writes) + 1)) if last else list(range(1, n_writes + 1))


@pytest.mark.parametrize("kind", ["enospc", "kill"])
def test_a_fault_at_sampled_writes_then_the_same_command_resumes(tiny_full_run, tmp_path: Path, kind: str) -> None:
    n = len(tiny_full_run[2])
    assert n >= 30, tiny_full_run[2]  # every stage writes: data, manifests, shards
    codes = [fault_then_resume(tiny_full_run, tmp_path, k, kind) for k in sample(n, kind)]
    assert EX_IOERR in codes or kind == "kill", codes  # the sample's faults did stop the run


@pytest.mark.slow
@pytest.mark.skipif(not SWEEP, reason="the sweep of every write: set ALIGNMENT_FAULT_SWEEP=1 (or a range A-B)")
@pytest.mark.parametrize("kind", ["enospc", "kill"])
def test_a_fault_at_every_write_then_the_same_command_resumes(tiny_full_run, tmp_path: Path, kind: str) -> None:
    codes = [fault_then_resume(tiny_full_run, tmp_path, k, kind) for k in sweep(len(tiny_full_run[2]))]
    print(kind, "exit codes", {c: codes.count(c) for c in set(codes)})


def test_the_written_paths_cover_every_kind_of_write(tiny_full_run) -> None:
    """The sample is drawn from all of them: stage data, manifests, shards, the log, the lock.
    (This config trains no DPO policy; checkpoint saves cut short are tests/test_checkpoints.py's.)"""
    _, ref, paths = tiny_full_run
    rel = [os.path.relpath(p, ref) for p in paths]
    for needle in ("build/", "generate/shards/", "manifest.json", "dpo-train/", "logs/run-", "report.html",
                   "config.yaml", ".lock"):
        assert any(needle in r for r in rel), needle


class FullDisk:
    """A log file on a full disk: every write of a record fails."""

    def write(self, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        self.flush()


def test_a_log_that_cannot_be_written_still_ends_in_one_line(tiny_full_run, tmp_path: Path) -> None:
    """The run log is on the full disk too: no "--- Logging error ---", one line that says the
    traceback was not saved; the same command then finishes."""
    from alignment.runtime import console

    cfg, ref, paths = tiny_full_run
    k = next(i for i, p in enumerate(paths, 1) if "generate" in p)  # after the log's first records
    out = tmp_path / "run"
    argv = ["run", str(cfg), "--out", str(out), "--quiet"]

    def log_on_a_full_disk() -> None:
        console.RunLogHandler._open = lambda self: FullDisk()

    code = run_child(argv, out, k, "enospc", tmp_path / "stderr", log_on_a_full_disk)
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert code == EX_IOERR and len(lines) == 1, lines
    assert lines[0].startswith(f"alignment: error: no space left on the device holding {out}/generate/")
    assert lines[0].endswith("(the traceback was not saved: the log file could not be written)")
    assert run_child(argv, out, 0, "count", tmp_path / "stderr") == 0
    equal_rows(ref, out)


@pytest.mark.parametrize("err", [errno.EROFS, errno.EACCES])
def test_an_unwritable_run_dir_is_one_line_with_its_own_exit_code(tiny_full_run, tmp_path: Path, err: int) -> None:
    cfg, _, _ = tiny_full_run
    out = tmp_path / "run"
    argv = ["run", str(cfg), "--out", str(out), "--quiet"]
    real = os.open

    def unwritable() -> None:
        def refuse(path, flags, *a, **kw):
            if str(path).startswith(str(out / "build")) and flags & os.O_CREAT:
                raise OSError(err, os.strerror(err), path)
            return real(path, flags, *a, **kw)

        os.open = refuse

    code = run_child(argv, out, 0, "count", tmp_path / "stderr", unwritable)
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert code == EX_CANTCREAT and len(lines) == 1, lines
    assert str(out / "build") in lines[0] and "rerun the same command" in lines[0], lines
