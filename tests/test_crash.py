"""Crash safety: `alignment run` on tiny models, SIGKILLed at random moments in every stage and
resumed, ends with the same rows as an uninterrupted run with the same seed.

The reference run is in-process; the killed runs are forked children of this process, so a kill costs the stage's
work, not a fresh interpreter's imports. Each child runs `alignment.cli.main(["run", ...])`
exactly as the command line does, lock and all, and names each stage on a pipe as the runner
starts it; SIGKILL gives it no chance to clean up. For each stage in turn (while it has no
manifest), up to three children are killed a seeded random time after starting it, drawn from
the stage's duration in the reference run; then a last child finishes the run. Every stage's
Parquet artifacts must equal the reference run's, row for row.

Every wait on a child has a deadline. A forked child can block forever on a lock held at the
fork or left held by a killed sibling (seen in CI: children parked in a futex on tqdm's
process-shared semaphore, then the parent itself; each child now takes a private tqdm lock,
`private_tqdm_lock`). Such a child is killed like any other and the
run resumed; the test prints how many stalled and fails if more than a few did, so a real hang in
the run (which would stall every child) fails loudly instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import sys
import time
import traceback
from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment import runner
from alignment.cli import main
from alignment.runner import STAGE_NAMES

SEED = 19
KILLS_PER_STAGE = 3
MIN_KILLS = 20
MAX_STALLS = 3  # children killed for making no progress by the deadline (see the docstring)


def tiny_config(path: Path, model: Path) -> Path:
    cpu = {"device": "cpu", "dtype": "float32"}
    data = {
        "name": "crash",
        # train gives the DPO pairs, test is held out for the DPO evaluation only.
        "task": {"name": "mathbook", "source": "synthetic", "splits": ["train", "test"], "n_examples": 2, "seed": 0},
        "generation": {"model": str(model), "n_samples": 2, "max_new_tokens": 6, "batch_size": 2, "splits": ["train"], **cpu},
        "attribution": {"receipts": True},
        "reward": {"backend": "judge", "model": str(model), "max_length": 2048, "batch_size": 2, **cpu},
        "judge": {"name": "keyword"},
        "bon": {"ns": [1, 2]},
        "dpo": {"max_pairs": 4, "batch_size": 1, "eval_n_samples": 1, "max_new_tokens": 6, **cpu},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def private_tqdm_lock() -> None:
    """Give this forked child its own tqdm lock. tqdm's default lock holds a multiprocessing
    semaphore shared across fork, taken by every bar, even a disabled one; a child SIGKILLed
    inside it would leave it held, and the parent and every later child would wait on it
    forever (the stalled children, and once the whole suite, in CI). A real `alignment run`
    is not forked from a process that shares its lock, so only the test needs this."""
    import threading

    from tqdm import std

    lock = threading.RLock()
    todo = [std.tqdm]
    while todo:  # a subclass that already built its own lock keeps it in its own __dict__
        cls = todo.pop()
        cls.set_lock(lock)
        todo += cls.__subclasses__()


def fork_run(argv: list[str]) -> tuple[int, int]:
    """Fork a child that runs the CLI and exits with its status; returns (pid, read end of a
    pipe on which the child names each stage as the runner starts it)."""
    sys.stdout.flush()
    sys.stderr.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 1
        try:
            os.close(read)
            private_tqdm_lock()
            devnull = os.open(os.environ.get("CRASH_CHILD_LOG", os.devnull), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            real = runner.context

            def announce(stage: runner.Stage, *args: object, **kw: object) -> object:
                with contextlib.suppress(OSError):  # observe only: the run is unchanged
                    os.write(write, f"{stage.name}\n".encode())
                return real(stage, *args, **kw)

            runner.context = announce
            code = main(argv)
        except BaseException:  # reported on the child's stderr (CRASH_CHILD_LOG to keep it)
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    return pid, read


def wait_for_stage(pid: int, pipe: int, stage: str, deadline: float) -> bool | None:
    """Block until the child announces `stage` (True), exits without reaching it (False), or
    the monotonic `deadline` passes (None: the child stalled)."""
    seen = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([pipe], [], [], 0.05)
        if ready:
            chunk = os.read(pipe, 4096)
            if not chunk:
                return False
            seen += chunk
            if stage.encode() in seen.split(b"\n"):
                return True
    return None


def finish(argv: list[str], limit: float) -> tuple[int, int]:
    """Run a last child to the end; returns (its exit code, children killed for stalling)."""
    for stalls in range(MAX_STALLS + 1):
        pid, pipe = fork_run(argv)
        os.close(pipe)
        if (code := wait(pid, limit)) is not None:
            return code, stalls
        kill(pid, None)
    raise AssertionError(f"the final resumed run stalled {MAX_STALLS + 1} times in a row")


def wait(pid: int, timeout: float | None) -> int | None:
    """The child's exit code, or None if it is still running after `timeout` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG if deadline is not None else 0)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.002)


def kill(pid: int, code: int | None) -> int:
    """SIGKILL the child unless `wait` already returned its exit `code`, and reap it; returns its
    exit code. A child that finished before the kill (fast machines) was reaped by `wait`: its
    pid is no longer ours (os.kill raised ProcessLookupError, or could hit a reused pid)."""
    if code is not None:
        return code
    os.kill(pid, signal.SIGKILL)
    return wait(pid, None)


def pending_stage(out: Path, stages: list[str]) -> str | None:
    """The first stage without a manifest (the one a resumed run works on next)."""
    return next((s for s in stages if not (out / s / "manifest.json").is_file()), None)


def artifacts(out: Path) -> dict[str, pd.DataFrame]:
    """Every stage's Parquet files (shards excluded: they are the resume mechanism itself)."""
    return {
        str(p.relative_to(out)): pd.read_parquet(p)
        for p in sorted(out.glob("*/**/*.parquet"))
        if "shards" not in p.parts and not p.name.startswith(".")
    }


def test_sigkill_anywhere_then_resume_gives_identical_rows(tmp_path: Path, tiny_llama_dir: Path) -> None:
    cfg = tiny_config(tmp_path / "crash.yaml", tiny_llama_dir)
    ref, out = tmp_path / "ref", tmp_path / "killed"
    # In-process: the forked children then inherit every module the stages import.
    assert main(["run", str(cfg), "--out", str(ref), "--quiet"]) == 0
    # Stages this config turns off (the audit) have no manifest and are not killed in.
    ran = [s for s in STAGE_NAMES if (ref / s / "manifest.json").is_file()]
    seconds = {s: json.loads((ref / s / "manifest.json").read_text())["seconds"] for s in ran}

    rng = random.Random(SEED)
    kills: list[tuple[str, float, bool]] = []  # (stage, seconds after it started, still running)
    stalled: list[str] = []  # the stage each child was on when killed for making no progress
    limit = 120 + 20 * sum(seconds.values())  # far above any child's time to reach or end a stage
    argv = ["run", str(cfg), "--out", str(out), "--quiet"]
    while (target := pending_stage(out, ran)) is not None:
        assert len(kills) < 10 * len(ran) and len(stalled) <= MAX_STALLS, (kills, stalled)
        pid, pipe = fork_run(argv)
        reached = wait_for_stage(pid, pipe, target, time.monotonic() + limit)
        assert reached is not False, f"the resumed run exited before stage {target}"
        tries = sum(t == target for t, _, _ in kills)
        t0 = time.monotonic()
        if reached is None:  # stalled before the stage: kill it and resume, as for any kill
            code = None
            stalled.append(target)
        elif tries < KILLS_PER_STAGE:  # a random moment in the stage (or just after it)
            code = wait(pid, rng.uniform(0, seconds[target]))
        else:  # killed often enough: let it finish this stage, kill right after its manifest
            while (code := wait(pid, 0.002)) is None and pending_stage(out, ran) == target:
                if time.monotonic() - t0 > limit:
                    stalled.append(target)
                    break
        assert code is None or (code == 0 and pending_stage(out, ran) is None), (target, code)
        assert kill(pid, code) in (-signal.SIGKILL, 0)
        os.close(pipe)
        kills.append((target, round(time.monotonic() - t0, 3), pending_stage(out, ran) == target))
    code, last_stalls = finish(argv, limit)
    assert code == 0
    stalled += ["(final run)"] * last_stalls
    print("KILLS", len(kills), sum(r for _, _, r in kills), sorted({t for t, _, _ in kills}), "STALLED", stalled)
    assert len(stalled) <= MAX_STALLS, stalled
    assert len(kills) >= MIN_KILLS, kills
    # Most kills land while their stage runs (the rest just after it finished).
    # (Which stages a random moment lands in depends on the machine's speed: require the long
    # generate stage and at least half of the stages, not a fixed list.)
    running = {t for t, _, r in kills if r}
    assert "generate" in running and len(running) >= len(ran) // 2, kills

    want, got = artifacts(ref), artifacts(out)
    assert set(got) == set(want) and "generate/data.parquet" in want
    for name, df in want.items():
        pd.testing.assert_frame_equal(got[name], df, obj=name)
    # None lost or duplicated: the responses are exactly one per (example, variant, sample).
    responses = got["generate/data.parquet"]
    assert not responses.duplicated(["example_id", "variant", "sample"]).any()
    for stage in ran:
        a, b = (json.loads((d / stage / "manifest.json").read_text()) for d in (ref, out))
        # report.html names its run dir, so its size differs with the folder's name.
        rows = [{k: v for k, v in m["rows"].items() if k != "html_bytes"} for m in (a, b)]
        assert a["key"] == b["key"] and rows[0] == rows[1], stage


@pytest.mark.parametrize("stage", ["score", "bon"])
def test_manifest_is_gone_while_a_stage_rewrites_its_data(tmp_path: Path, tiny_llama_dir: Path,
                                                          stage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash after a stage's data write but before its manifest must not leave the old
    manifest vouching for the new data: the runner removes it before the stage runs."""
    from alignment import runner

    cfg = tiny_config(tmp_path / "c.yaml", tiny_llama_dir)
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 0
    seen: list[bool] = []
    real = runner.get_stage

    def spy(name: str) -> runner.Stage:
        s = real(name)
        if name != stage:
            return s

        def fn(section: object, ctx: object) -> dict[str, int]:
            seen.append((out / stage / "manifest.json").exists())
            raise KeyboardInterrupt  # the crash, right where the stage would write its data

        return runner.Stage(s.name, fn, s.section, s.reads, s.inputs, s.enabled)

    monkeypatch.setattr(runner, "get_stage", spy)
    change = {"score": "reward.batch_size=3", "bon": "bon.headline_n=1"}[stage]  # new key: the stage reruns
    assert main(["run", str(cfg), "--out", str(out), "--quiet", "--set", change]) == 130
    assert seen == [False] and not (out / stage / "manifest.json").exists()


def test_a_child_that_never_names_its_stage_is_seen_as_stalled_by_the_deadline() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: holds the pipe open and says nothing, like a deadlocked run
        time.sleep(30)
        os._exit(0)
    os.close(write)
    t0 = time.monotonic()
    try:
        assert wait_for_stage(pid, read, "generate", t0 + 0.3) is None
        assert 0.3 <= time.monotonic() - t0 < 10
        assert wait(pid, 0.05) is None  # still alive: the caller kills it
    finally:
        kill(pid, None)
        os.close(read)


def test_kill_tolerates_a_child_that_already_finished() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    code = wait(pid, 30)
    assert code == 0  # reaped: its pid may already belong to another process
    assert kill(pid, code) == 0
    pid = os.fork()
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    assert kill(pid, wait(pid, 0.05)) == -signal.SIGKILL


def test_a_child_killed_inside_tqdms_lock_leaves_it_free() -> None:
    """Why each forked child takes a private tqdm lock: a child killed while holding the shared one
    would leave it held for this process and every later child, for good."""
    from tqdm.auto import tqdm

    tqdm(disable=True).close()  # the lock exists before the fork, as after the reference run
    shared = tqdm.get_lock().locks[0]  # the multiprocessing semaphore
    pid = os.fork()
    if pid == 0:
        private_tqdm_lock()  # what fork_run's child does first
        tqdm.get_lock().acquire()
        os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    free = shared.acquire(timeout=2)
    if free:
        shared.release()
    else:  # held by a dead process for good: give this process a fresh lock so the suite goes on
        private_tqdm_lock()
    assert free, "a killed child left tqdm's shared lock held"
