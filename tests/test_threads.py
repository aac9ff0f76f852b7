"""The thread governor: torch threads give way to other busy processes, and come back."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from alignment.cli import main
from alignment.runtime import threads


class Machine:
    """A fake clock and CPU counters: `run(seconds, own_cores, other_cores)` advances them."""

    def __init__(self) -> None:
        self.t = self.busy = self.own = 0.0
        self.applied: list[int] = []

    def run(self, seconds: float, own: float, other: float) -> None:
        self.t += seconds
        self.own += seconds * own
        self.busy += seconds * (own + other)

    def governor(self, ceiling: int = 2, cores: int = 2) -> threads.Governor:
        return threads.Governor(ceiling, cores, interval=1.0, busy=lambda: self.busy, own=lambda: self.own,
                                clock=lambda: self.t, apply=self.applied.append)  # fmt: skip


def test_gives_way_to_a_busy_process_and_takes_the_core_back():
    m = Machine()
    g = m.governor()
    m.run(2.0, own=2.0, other=0.0)
    assert g.tick() == 2 and m.applied == []  # idle machine: keep both threads
    m.run(2.0, own=1.1, other=0.9)  # a neighbour took a core
    assert g.tick() == 1 and m.applied == [1]
    m.run(0.5, own=1.0, other=0.0)
    assert g.tick() == 1  # within the interval: no new measurement
    m.run(1.0, own=1.0, other=0.0)  # the neighbour left
    assert g.tick() == 2 and m.applied == [1, 2] and g.changes == 2


def test_never_above_the_ceiling_nor_below_one():
    m = Machine()
    g = m.governor(ceiling=4, cores=16)
    m.run(1.0, own=4.0, other=0.0)
    assert g.tick() == 4
    m.run(1.0, own=1.0, other=20.0)
    assert g.tick() == 1


def test_off_without_proc_stat():
    g = threads.Governor(2, 2, busy=lambda: None, apply=lambda n: pytest.fail("no measurement, no change"))
    assert g.tick() == 2


def test_pinned_threads_are_not_governed(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert not threads.pinned(None) and threads.pinned(1)
    assert main(["--threads", "1", "config", "show", "configs/embedded_default.yaml"]) == 0
    assert threads.governor() is None
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # main() exported it for later libraries
    assert main(["config", "show", "configs/embedded_default.yaml"]) == 0
    assert (threads.governor() is not None) == threads.STAT.exists()
    threads.govern(None)


@pytest.mark.skipif(not threads.STAT.exists(), reason="needs /proc/stat")
def test_real_counters_see_a_busy_neighbour():
    """On the real machine: a spinning child shows up as about one core of other processes' time."""
    seen: list[int] = []
    g = threads.Governor(64, 64, interval=0.5, apply=seen.append)
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.1)
        g._mark = g._sample()  # measure only while the child spins
        time.sleep(0.6)
        g.tick()
    finally:
        child.kill()
        child.wait()
    assert seen and seen[0] <= 63  # 64 cores minus at least the child's one
