"""Torch CPU threads that give way when another process needs the cores.

OpenMP threads spin-wait for each other between parallel regions. When another busy process
holds one of a small machine's cores, each region waits for a thread the scheduler has parked,
and a 2-thread decode next to one busy process runs about 3x slower than idle (`alignment bench`,
contention case), where a fair share would cost 2x at most. One thread does not wait for anyone.

So when the user has not pinned the threads (`--threads`, `OMP_NUM_THREADS`), the CLI starts a
`Governor`: the hot loops (each decode step, each scored prompt, each training step) call
`tick()`, which every `interval` seconds measures how many cores *other* processes kept busy
(the machine's busy time from /proc/stat minus this process's own CPU time) and sets torch's
threads to the cores left over, between 1 and the ceiling chosen at start. It must run on the
thread that runs the work: OpenMP's thread count is a per-thread setting. Where /proc/stat is
missing (not Linux) the governor stays off.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from alignment.errors import UserError

STAT = Path("/proc/stat")
MAX_DEFAULT_THREADS = 4


def env_threads(env: Mapping[str, str]) -> int | None:
    """A valid (positive integer) `OMP_NUM_THREADS`, else None.

    >>> env_threads({"OMP_NUM_THREADS": " 2"}), env_threads({"OMP_NUM_THREADS": "0"}), env_threads({})
    (2, None, None)
    """
    raw = env.get("OMP_NUM_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) >= 1 else None


def choose_threads(flag: int | None, env: Mapping[str, str] = os.environ, cores: int | None = None) -> int:
    """`--threads`, else a valid `OMP_NUM_THREADS`, else min(cores, 4).

    >>> choose_threads(3, {}), choose_threads(None, {"OMP_NUM_THREADS": "2"}), choose_threads(None, {}, 16)
    (3, 2, 4)
    >>> choose_threads(None, {"OMP_NUM_THREADS": "lots"}, 2)
    2
    """
    if flag is not None:
        if not 1 <= flag <= 1024:
            raise UserError(f"--threads must be between 1 and 1024, got {flag}")
        return flag
    return env_threads(env) or max(1, min(cores or os.cpu_count() or 1, MAX_DEFAULT_THREADS))


def pinned(flag: int | None, env: Mapping[str, str] = os.environ) -> bool:
    """Whether the user fixed the thread count (`--threads` or a valid `OMP_NUM_THREADS`).

    >>> pinned(None, {}), pinned(2, {}), pinned(None, {"OMP_NUM_THREADS": "1"}), pinned(None, {"OMP_NUM_THREADS": "0"})
    (False, True, True, False)
    """
    return flag is not None or env_threads(env) is not None


def set_threads(n: int) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", str(n))  # for libraries initialised later
    if "torch" in sys.modules:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


def configure(flag: int | None) -> None:
    """The CLI's thread setup: choose the count, set it, and govern it unless the user pinned it."""
    n, fixed = choose_threads(flag), pinned(flag)  # before set_threads exports OMP_NUM_THREADS
    set_threads(n)
    govern(None if fixed else n)


def machine_busy_seconds(path: Path = STAT) -> float | None:
    """CPU seconds all cores have spent busy since boot (user, nice, system, irq, softirq,
    steal; idle and iowait excluded), or None where the file is unreadable.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "stat"
    >>> _ = p.write_text("cpu  100 0 50 900 10 0 0 0 0 0\\ncpu0 1 2 3\\n")
    >>> machine_busy_seconds(p) * os.sysconf("SC_CLK_TCK")
    150.0
    """
    try:
        first = path.read_text().split("\n", 1)[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in first[1:9])
    except (OSError, ValueError, IndexError):
        return None
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def threads_for(other_busy: float, cores: int, ceiling: int) -> int:
    """Threads to use when other processes keep `other_busy` cores busy: the free cores, rounded,
    between 1 and `ceiling`.

    >>> threads_for(0.0, 2, 2), threads_for(0.98, 2, 2), threads_for(0.3, 2, 2), threads_for(3.2, 16, 4)
    (2, 1, 2, 4)
    """
    return max(1, min(ceiling, round(cores - other_busy)))


class Governor:
    """Adjusts torch's thread count to the cores other processes leave free (module docstring)."""

    def __init__(
        self,
        ceiling: int,
        cores: int | None = None,
        interval: float = 1.0,
        busy: Callable[[], float | None] = machine_busy_seconds,
        own: Callable[[], float] = own_cpu_seconds,
        clock: Callable[[], float] = time.monotonic,
        apply: Callable[[int], None] | None = None,
    ) -> None:
        self.ceiling, self.cores, self.interval = ceiling, cores or os.cpu_count() or 1, interval
        self._busy, self._own, self._clock = busy, own, clock
        self._apply = apply or _set_torch_threads
        self.threads = ceiling
        self.changes = 0  # how often it moved
        self._mark = self._sample()

    def _sample(self) -> tuple[float, float, float] | None:
        busy = self._busy()
        return None if busy is None else (self._clock(), busy, self._own())

    def tick(self) -> int:
        """Re-measure if `interval` has passed since the last measurement; the threads in use."""
        if self._mark is None or self._clock() - self._mark[0] < self.interval:
            return self.threads
        now = self._sample()
        if now is None:
            return self.threads
        wall, busy, own = (a - b for a, b in zip(now, self._mark, strict=True))
        self._mark = now
        want = threads_for(max(0.0, busy - own) / wall, self.cores, self.ceiling)
        if want != self.threads:
            self.threads, self.changes = want, self.changes + 1
            self._apply(want)
        return self.threads


def _set_torch_threads(n: int) -> None:
    import torch

    torch.set_num_threads(n)


_GOVERNOR: Governor | None = None


def govern(ceiling: int | None) -> Governor | None:
    """Start the process's governor with this ceiling (None stops it); returns it."""
    global _GOVERNOR
    _GOVERNOR = Governor(ceiling) if ceiling and STAT.exists() else None
    return _GOVERNOR


def governor() -> Governor | None:
    return _GOVERNOR


def tick() -> None:
    """Called from hot loops; a no-op unless the CLI started a governor."""
    if _GOVERNOR is not None:
        _GOVERNOR.tick()
