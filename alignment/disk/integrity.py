"""What a stage wrote, and whether it is still there intact: size and content hash of every file.

`RunDir.finish` records `files: {relative path: {"size": n, "xxh3_128": hex}}` in the stage's
manifest; before a finished stage is reused (skipped, or read by a later stage) its files are
checked against it. A file cut short, with flipped bytes, or gone makes the stage not done: the
runner recomputes it, naming the file. xxh3-128 (the `xxhash` package, which `datasets` already
needs) is not cryptographic, and need not be: it guards against a damaged disk or an interrupted
copy, not an adversary; it hashes ~28 GB/s on one core where sha256 did 1.5 and blake2b 0.7
(hashlib and xxhash over 8 MiB of random bytes in memory, on a busy 2-core development machine;
not a benchmark).

Manifests written before files were recorded carry no `files`: such a stage's Parquet files must
at least open (their footer and schema read), and its files are recorded on that first reuse, so
later damage is caught like any other.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import xxhash

HASH = "xxh3_128"
MANIFEST = "manifest.json"
# Files a stage writes beside its folder, at the top of the run dir (recorded as "../NAME").
TOP_LEVEL = {"report": ("report.md", "report.html")}
# Verified (path, size, mtime, inode) in this process: a stage read by five later stages is
# hashed once per command, not five times.
_verified: set[tuple[str, int, int, int]] = set()


def forget_checked() -> None:
    """Drop this process's record of checked files, so the next check reads every file again
    (the hash-overhead measure times a check as a fresh process makes it)."""
    _verified.clear()


def digest(path: Path) -> str:
    """The content hash of one file.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "a"; _ = p.write_bytes(b"abc")
    >>> digest(p)
    '06b05ab6733a618578af5f94892f3950'
    """
    h = xxhash.xxh3_128()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def stage_files(folder: Path) -> list[Path]:
    """The files a stage wrote: everything under its folder but the manifest and hidden names
    (temporary files of a write in progress, lock files)."""
    if not folder.is_dir():
        return []
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and not (root == str(folder) and name == MANIFEST):
                found.append(Path(root) / name)
    return found


def record(folder: Path) -> dict[str, dict[str, Any]]:
    """Size and hash of every file the stage in `folder` wrote, by path relative to it."""
    out = {}
    beside = [p for name in TOP_LEVEL.get(folder.name, ()) if (p := folder.parent / name).is_file()]
    for p in stage_files(folder) + beside:
        st = p.stat()
        out[os.path.relpath(p, folder).replace(os.sep, "/")] = {"size": st.st_size, HASH: digest(p)}
        _verified.add((str(p), st.st_size, st.st_mtime_ns, st.st_ino))
    return out


def damage(folder: Path, files: dict[str, Any]) -> str | None:
    """Why the recorded `files` of `folder` no longer hold (naming the first that does not), or
    None when every one is there with its size and hash."""
    for rel, want in sorted(files.items()):
        p = folder / rel
        try:
            st = p.stat()
        except OSError:
            return f"{p} is missing"
        if not isinstance(want, dict) or st.st_size != want.get("size"):
            return f"{p} has {st.st_size:,} bytes, not the {want.get('size', '?'):,} it was written with" \
                if isinstance(want, dict) and isinstance(want.get("size"), int) else f"{p}: damaged manifest record"
        stamp = (str(p), st.st_size, st.st_mtime_ns, st.st_ino)
        if stamp in _verified:
            continue
        try:
            same = digest(p) == want.get(HASH)
        except OSError as e:
            return f"{p} cannot be read ({e.strerror})"
        if not same:
            return f"{p} no longer has the content it was written with"
        _verified.add(stamp)
    return None


def unreadable(folder: Path) -> str | None:
    """For a manifest without recorded files: the first Parquet file whose footer does not read."""
    import pyarrow.parquet as pq

    for p in stage_files(folder):
        if p.suffix == ".parquet":
            try:
                pq.ParquetFile(p).schema_arrow  # noqa: B018  (reading the footer is the check)
            except Exception as e:  # pyarrow raises several types for damaged files
                return f"{p} is unreadable ({type(e).__name__})"
    return None
