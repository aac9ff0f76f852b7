"""Run store: one folder per run, one sub-folder per stage with `data.parquet` + `manifest.json`.

Used by every stage (`alignment run CONFIG` writes `runs/<name>/<stage>/`). Writes are atomic
(temporary file + rename). A stage whose manifest carries the same key (config section hash plus
the keys of its inputs) is skipped on re-run; `generate` commits finished prompts in shards so an
interrupted run resumes without duplicates.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import numbers
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import umask
from alignment.disk.faults import MachineFault, fault_of, writing
from alignment.disk.integrity import damage, record, unreadable
from alignment.errors import UserError
from alignment.version import __version__


def honour_umask(path: Path, directory: bool = False) -> None:
    """`mkstemp`/`mkdtemp` create 0600/0700; give the artifact the mode a plain open() would."""
    os.chmod(path, (0o777 if directory else 0o666) & ~umask())


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it over `path` only if the block succeeds."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path}: is a directory, expected a file path to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except (FileExistsError, NotADirectoryError):
        raise UserError(f"{path}: a parent of this path is a file, not a directory") from None
    except OSError as e:
        if (fault := fault_of(e)) is None:
            raise
        raise MachineFault(fault.code, str(path)) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        with writing(path, always=True):
            yield tmp_path
            honour_umask(tmp_path)
            os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def finite_or_none(obj: Any) -> Any:
    """JSON-ready copy of `obj` with NaN and infinities as None (JSON has no such numbers).

    >>> finite_or_none({"a": [1.0, float("inf")], "b": float("nan")})
    {'a': [1.0, None], 'b': None}
    """
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite_or_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [finite_or_none(v) for v in obj]
    return obj


def write_json(path: Path, obj: Any) -> None:
    text = json.dumps(finite_or_none(obj), indent=2, sort_keys=True, default=str, allow_nan=False)
    write_text(path, text + "\n")


def write_parquet(path: Path, rows: list[dict[str, Any]] | pd.DataFrame) -> None:
    """Write rows as a Hugging Face `datasets` Parquet file, atomically."""
    import datasets

    if isinstance(rows, pd.DataFrame):
        ds = datasets.Dataset.from_pandas(rows, preserve_index=False)
    else:
        ds = datasets.Dataset.from_list(rows) if rows else datasets.Dataset.from_dict({})
    with atomic_path(path) as tmp:
        ds.to_parquet(str(tmp))


def read_parquet(path: Path, columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """A Parquet artifact; a missing, damaged or foreign file (lacking `columns`) is a UserError."""
    if Path(path).is_dir():
        raise UserError(f"{path}: is a directory, expected a Parquet file")
    try:
        df = pd.read_parquet(path)
    except FileNotFoundError:
        raise UserError(f"missing artifact {path}") from None
    except Exception as e:  # pyarrow raises several types for damaged files
        raise UserError(f"{path}: unreadable Parquet ({type(e).__name__})") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise UserError(f"{path}: not this stage's artifact (missing columns {missing}); "
                        f"delete the stage folder and rerun it")
    return df


# Columns a downstream stage relies on, per (stage, file): a foreign or stale file fails here,
# naming itself, instead of as a KeyError deep in a stage.
COLUMNS: dict[tuple[str, str], tuple[str, ...]] = {
    ("build", "data.parquet"): ("id", "system", "query", "cf_query", "answer", "options"),
    ("generate", "data.parquet"): ("example_id", "variant", "sample", "text", "pred", "valid", "correct"),
    ("attribute", "data.parquet"): ("example_id", "sample", "d", "c", "p_d", "p_c", "cf_sample"),
    ("score", "data.parquet"): ("example_id", "variant", "sample"),
    ("ack", "data.parquet"): ("example_id", "variant", "sample", "ack"),
}
# Columns whose every value must be text, per (stage, file): a null or a number where a response
# belongs would otherwise fail deep in a judge or the reward model, naming neither file nor row.
TEXT_COLUMNS: dict[tuple[str, str], tuple[str, ...]] = {
    ("generate", "data.parquet"): ("text",),
}


def not_text(df: pd.DataFrame, path: Path, columns: tuple[str, ...]) -> str | None:
    """The first row of `df` (as read from `path`) whose value in one of `columns` is not a
    string, as a one-line reason naming the file, row and value; None when every value is text.

    >>> frame = pd.DataFrame({"example_id": ["a", "b"], "text": ["fine", 3]})
    >>> not_text(frame, Path("g/data.parquet"), ("text",))
    "g/data.parquet row 2 (example_id 'b'): 'text' holds the number 3, where text belongs"
    >>> not_text(frame.iloc[:1], Path("g/data.parquet"), ("text",)) is None
    True
    """
    for column in columns:
        bad = next((i for i, v in enumerate(df[column].tolist()) if not isinstance(v, str)), None)
        if bad is None:
            continue
        value = df[column].iloc[bad]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            what = "a null"
        else:
            kind = "number" if isinstance(value, numbers.Number) and not isinstance(value, bool) else type(value).__name__
            what = f"the {kind} {str(value)[:40]}"
        ids = "".join(f" ({c} {df[c].iloc[bad]!r})" for c in ("example_id",) if c in df.columns)
        return f"{path} row {bad + 1}{ids}: {column!r} holds {what}, where text belongs"
    return None


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


class RunDir:
    """A run directory; stages read their inputs' artifacts and write their own."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def stage(self, name: str) -> Path:
        return self.path / name

    def manifest(self, name: str) -> dict[str, Any] | None:
        """The stage's manifest, or None when absent or damaged (not JSON, not an object, no
        string key): a manifest that cannot vouch for its data counts as no manifest."""
        p = self.stage(name) / "manifest.json"
        if not p.is_file():
            return None
        try:
            m = json.loads(p.read_bytes().decode("utf-8"))
        except (OSError, ValueError, RecursionError):  # ValueError covers JSON and UTF-8 errors
            return None
        return m if isinstance(m, dict) and isinstance(m.get("key"), str) else None

    def seconds(self, name: str) -> float:
        """Seconds the stage's work took: its manifest's, or the `training_seconds` it records for
        finished work it reused from an earlier call (dpo-train's runs), whichever is larger."""
        m = self.manifest(name) or {}
        return max(float(m.get("seconds") or 0.0), float(m.get("training_seconds") or 0.0))

    def key(self, name: str) -> str | None:
        m = self.manifest(name)
        return m.get("key") if m else None

    def is_done(self, name: str, key: str, say: Callable[[str], None] = print) -> bool:
        """The stage finished under `key` and its files are intact; a damaged one is said
        through `say` (the runner passes its console line) and counts as not done, so the runner
        recomputes it."""
        if self.key(name) != key:
            return False
        why = self.damage(name, record_old=True)
        if why is not None:
            say(f"[{name}] {why}: recomputing the stage")
        return why is None

    def damage(self, name: str, record_old: bool = False) -> str | None:
        """Why the finished stage's files can no longer be trusted (naming the file), or None.
        A manifest from before files were recorded is checked by reading its Parquet footers
        and, with `record_old`, given its files' record now (`alignment.disk.integrity`)."""
        m = self.manifest(name)
        if m is None:
            return None
        files = m.get("files")
        if isinstance(files, dict):
            return damage(self.stage(name), files)
        if files is not None:
            return f"{self.stage(name) / 'manifest.json'}: its 'files' record is damaged"
        why = unreadable(self.stage(name))
        if why is None and record_old:
            write_json(self.stage(name) / "manifest.json", {**m, "files": record(self.stage(name))})
        return why

    def require(self, name: str) -> dict[str, Any]:
        m = self.manifest(name)
        if m is None:
            raise UserError(
                f"{self.stage(name)}: stage '{name}' has not run yet in {self.path} "
                f"(run `alignment {name} CONFIG --out {self.path}` or `alignment run CONFIG`)"
            )
        why = self.damage(name)
        if why is not None:  # never read as if it were whole
            raise UserError(f"{why}: stage '{name}' must be recomputed "
                            f"(run `alignment {name} CONFIG --out {self.path}` or `alignment run CONFIG`)")
        return m

    def read(self, name: str, file: str = "data.parquet") -> pd.DataFrame:
        """A stage's artifact. The runner checks manifests before a stage runs; reading does not,
        so a stage function can be called from Python on a run dir without any keys."""
        path = self.stage(name) / file
        if not path.is_file():
            raise UserError(f"{path}: stage '{name}' has not run yet in {self.path} "
                            f"(run `alignment {name} CONFIG --out {self.path}` or `alignment run CONFIG`)")
        df = read_parquet(path, COLUMNS.get((name, file), ()))
        why = not_text(df, path, TEXT_COLUMNS.get((name, file), ()))
        if why is not None:
            raise UserError(f"{why}; delete {self.stage(name)} and rerun the {name} stage "
                            f"(`alignment {name} CONFIG --out {self.path}`)")
        return df

    def finish(
        self,
        name: str,
        key: str,
        started: float,
        rows: dict[str, int],
        models: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Write the stage manifest last: its presence marks the stage as complete."""
        manifest = {
            "stage": name,
            "key": key,
            "package_version": __version__,
            "git_commit": git_commit(),
            "models": models or {},
            "rows": rows,
            "seconds": round(time.time() - started, 3),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            **(extra or {}),
            "files": record(self.stage(name)),  # checked whenever the stage is reused
        }
        write_json(self.stage(name) / "manifest.json", manifest)
        return manifest

    def invalidate(self, name: str) -> None:
        p = self.stage(name) / "manifest.json"
        if p.is_dir():
            import shutil

            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


LOCK_FILE = ".lock"


def lock_holder_of(fd: int) -> str | None:
    """Take the exclusive lock on the open lock file `fd` without waiting: None when taken, else
    the pid its holder wrote into it (the lock goes with `fd` when it is closed)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EACCES):
            raise
        return os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
    return None


def make_folder(path: Path, what: str = "run dir") -> Path:
    """Create the `--out` folder `path` (parents too); a path of the wrong kind is a UserError."""
    if path.exists() and not path.is_dir():
        raise UserError(f"--out {path}: exists and is not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UserError(f"--out {path}: a parent of this path is a file, not a directory") from None
    except OSError as e:
        if (fault := fault_of(e, path)) is not None:
            raise fault from None
        raise UserError(f"--out {path}: cannot create the {what} ({e.strerror})") from None
    return path


@contextlib.contextmanager
def locked(folder: Path, what: str = "run dir", hint: str = "wait for it to finish or use another --out",
           name: str = LOCK_FILE) -> Iterator[None]:
    """Hold an exclusive lock on `folder/name` for the block; a second holder fails at once,
    naming the first one's pid (written into the lock file). The kernel drops the lock when the
    process dies, so a crashed run never leaves a stale lock behind. `what` and `hint` word the
    refusal for the thing guarded (a run dir, an organism cache entry, a benchmark folder)."""
    folder = Path(folder)
    path = folder / name
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; remove it (it should be the {what}'s lock file)") from None
    except OSError as e:
        if (fault := fault_of(e, path)) is not None:
            raise fault from None
        raise UserError(f"{path}: cannot open the {what}'s lock file ({e.strerror})") from None
    try:
        holder = lock_holder_of(fd)
        if holder is not None:
            raise UserError(f"{folder}: {what} is in use by another alignment process (pid {holder}); {hint}")
        with writing(path):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock
