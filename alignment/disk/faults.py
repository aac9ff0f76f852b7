"""Faults of the machine, not of the toolkit: a full disk, a quota, a read-only or unwritable folder.

Such an error is no bug, and nothing finished is lost: every write is atomic and every stage
resumes. The CLI turns it into one line naming the path being written and what is wrong, with an
exit status of its own from the BSD sysexits convention (docs/troubleshooting.md):

- 74 (EX_IOERR): no space left, disk quota exceeded, an I/O error of the device;
- 73 (EX_CANTCREAT): a read-only file system, or a folder this user may not write.

Libraries report these in several shapes: an `OSError` with an errno (Python, pyarrow through a
Python file), a Rust `Os { code: 28, .. }` (safetensors, tokenizers) or a bare message (torch's
archive writer), often chained under another exception. `fault_of` reads them all.
"""

from __future__ import annotations

import contextlib
import errno
import re
from collections.abc import Iterator
from pathlib import Path

EX_IOERR = 74
EX_CANTCREAT = 73

WHAT = {
    errno.ENOSPC: ("no space left on the device holding {path}", EX_IOERR),
    errno.EDQUOT: ("disk quota exceeded on the device holding {path}", EX_IOERR),
    errno.EIO: ("an I/O error on the device holding {path}", EX_IOERR),
    errno.EROFS: ("{path} is on a read-only file system", EX_CANTCREAT),
    errno.EACCES: ("permission denied: cannot write {path}", EX_CANTCREAT),
    errno.EPERM: ("operation not permitted: cannot write {path}", EX_CANTCREAT),
}
# The errno as Rust's io::Error, pyarrow's and Python's messages print it.
ERRNO_IN_TEXT = re.compile(r"\[Errno (\d+)\]|\berrno (\d+)\b|Os \{ code: (\d+)")
# torch's zip writer (checkpoints' optimizer.pt) reports a failed write without an errno; on a
# healthy disk that only happens when the device refuses the bytes.
TORCH_WRITE = re.compile(r"PytorchStreamWriter failed writing file|file write failed")


class MachineFault(Exception):
    """An environment error (`code`, an errno) while writing `path` (None when nothing named it)."""

    def __init__(self, code: int, path: str | None) -> None:
        super().__init__(code, path)
        self.code, self.path = code, path

    def __repr__(self) -> str:
        return f"MachineFault(code={self.code}, path={self.path!r})"

    def __str__(self) -> str:
        return message(self.code, self.path)

    @property
    def exit_code(self) -> int:
        return WHAT.get(self.code, ("", EX_IOERR))[1]


def message(code: int, path: str | None) -> str:
    """What is wrong, naming the path.

    >>> message(errno.ENOSPC, "runs/x/generate")
    'no space left on the device holding runs/x/generate'
    >>> message(errno.EROFS, None)
    'the folder being written is on a read-only file system'
    """
    text = WHAT.get(code, ("an I/O error on the device holding {path}", EX_IOERR))[0]
    return text.format(path=path if path else "the folder being written")


def _errno_of(exc: BaseException) -> int | None:
    if isinstance(exc, MachineFault):
        return exc.code
    if isinstance(exc, OSError) and exc.errno in WHAT:
        return exc.errno
    for m in ERRNO_IN_TEXT.finditer(str(exc)):
        number = int(next(g for g in m.groups() if g))
        if number in WHAT:
            return number
    if isinstance(exc, RuntimeError) and TORCH_WRITE.search(str(exc)):
        return errno.EIO
    return None


def fault_of(exc: BaseException, path: str | Path | None = None) -> MachineFault | None:
    """The machine fault behind `exc` (itself or anything it was raised from), else None;
    `path` names the place being written when the exception does not.

    >>> fault_of(OSError(errno.ENOSPC, "No space left on device", "runs/x/a.parquet"))
    MachineFault(code=28, path='runs/x/a.parquet')
    >>> fault_of(RuntimeError("Error while serializing: IoError(Os { code: 28, kind: StorageFull })"), "ck")
    MachineFault(code=28, path='ck')
    >>> fault_of(ValueError("bad row")) is None
    True
    """
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, MachineFault):
            return cur
        code = _errno_of(cur)
        if code is not None:
            named = getattr(cur, "filename", None) if isinstance(cur, OSError) else None
            return MachineFault(code, str(named) if named else (str(path) if path else None))
        cur = cur.__cause__ or cur.__context__
    return None


@contextlib.contextmanager
def writing(path: str | Path, always: bool = False) -> Iterator[None]:
    """Inside the block, a machine fault that names no file (any fault, when `always`: the
    temporary file of an atomic write is better named by its target) is reported as writing
    `path`."""
    try:
        yield
    except MachineFault as e:
        if always and e.path != str(path):
            raise MachineFault(e.code, str(path)) from e
        raise
    except Exception as e:
        fault = fault_of(e, path)
        if fault is None:
            raise
        raise (MachineFault(fault.code, str(path)) if always else fault) from e


def fault_line(fault: MachineFault, log: str | None = None, log_saved: bool = True) -> str:
    """The one line the CLI prints; `log` is the command's log file, if it had one.

    >>> fault_line(MachineFault(errno.ENOSPC, "runs/x"), "runs/x/logs/run.log", False)  # doctest: +NORMALIZE_WHITESPACE
    'alignment: error: no space left on the device holding runs/x; finished work is kept: free
    some space and rerun the same command to resume (the traceback was not saved: the log file
    could not be written)'
    """
    fix = "free some space" if fault.exit_code == EX_IOERR else "make it writable (or choose another --out)"
    line = f"alignment: error: {fault}; finished work is kept: {fix} and rerun the same command to resume"
    if log is not None:
        line += f" (traceback in {log})" if log_saved else " (the traceback was not saved: the log file could not be written)"
    return line
