"""Content-keyed folders, atomic folder swaps and file-content hashes: one helper each.

Used by every stage that caches work (`alignment run CONFIG`: generate, score and receipts
shards, DPO checkpoints and evaluation shards), by the embedded-model conversion and by the
organism cache. A folder written under one content key is never resumed under another: mixing
shards of two configs would silently mix rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from alignment.disk.faults import writing

KEY_FILE = "key.txt"


def file_hash(paths: Path | Iterable[Path], n: int = 16) -> str:
    """sha256 of the files' bytes (in the order given, names included), first `n` hex digits.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a.txt"; _ = p.write_text("x")
    >>> file_hash(p) == file_hash([p]) and len(file_hash(p))
    16
    """
    digest = hashlib.sha256()
    for p in [paths] if isinstance(paths, Path) else paths:
        digest.update(Path(p).name.encode() + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:n]


def folder_digest(base: Path) -> str:
    """Cheap identity of a model folder: names, sizes and the config text (not the weights' bytes)."""
    h = hashlib.sha256()
    for p in sorted(base.iterdir()):
        if p.is_file():
            h.update(f"{p.name}:{p.stat().st_size}".encode())
            if p.suffix in (".json", ".jinja"):
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


@contextlib.contextmanager
def atomic_dir(target: Path) -> Iterator[Path]:
    """Yield an empty temporary folder beside `target`; on success it replaces `target` whole.

    A crash inside the block leaves `target` as it was (old or absent), never half written.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~umask())  # mkdtemp makes 0700; the folder should be like mkdir's
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_key(folder: Path, key: str) -> None:
    """Write `folder/key.txt` atomically (temporary file + rename)."""
    with writing(folder / KEY_FILE, always=True):  # a full disk names the key file, not its temporary
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{KEY_FILE}.", dir=folder)
        with os.fdopen(fd, "w") as f:
            f.write(key)
        os.chmod(tmp, 0o666 & ~umask())  # mkstemp makes 0600
        os.replace(tmp, folder / KEY_FILE)


def umask() -> int:
    """The process umask (read by setting and restoring it; there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def read_key(folder: Path) -> str | None:
    """The key a folder was written under, or None (missing, unreadable or not text)."""
    try:
        return (folder / KEY_FILE).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def keyed_dir(folder: Path, key: str) -> Path:
    """`folder`, emptied first unless it already holds work written under `key`.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "shards"
    >>> _ = keyed_dir(d, "a"); _ = (d / "part-0").write_text("rows")
    >>> (keyed_dir(d, "a") / "part-0").exists(), (keyed_dir(d, "b") / "part-0").exists()
    (True, False)
    """
    folder = Path(folder)
    if read_key(folder) != key:
        if folder.is_dir() or folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)
        elif folder.exists():
            folder.unlink()
        write_key(folder, key)
    return folder
