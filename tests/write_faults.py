"""Write faults for tests: a Python audit hook that sees every file a process opens for writing
under one folder and makes the k-th open fail with ENOSPC, or ends the process there."""

from __future__ import annotations

import errno
import os
from pathlib import Path

KILLED = 137  # the exit status of a process stopped at its k-th write


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
