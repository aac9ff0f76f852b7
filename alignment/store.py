"""Run store: one folder per run, one sub-folder per stage with `data.parquet` + `manifest.json`.

Used by every stage (`alignment run CONFIG` writes `runs/<name>/<stage>/`). Writes are atomic
(temporary file + rename). A stage whose manifest carries the same key (config section hash plus
the keys of its inputs) is skipped on re-run; `generate` commits finished prompts in shards so an
interrupted run resumes without duplicates.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.errors import UserError
from alignment.version import __version__


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it over `path` only if the block succeeds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path: Path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def write_parquet(path: Path, rows: list[dict[str, Any]] | pd.DataFrame) -> None:
    """Write rows as a Hugging Face `datasets` Parquet file, atomically."""
    import datasets

    if isinstance(rows, pd.DataFrame):
        ds = datasets.Dataset.from_pandas(rows, preserve_index=False)
    else:
        ds = datasets.Dataset.from_list(rows) if rows else datasets.Dataset.from_dict({})
    with atomic_path(path) as tmp:
        ds.to_parquet(str(tmp))


def read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except FileNotFoundError:
        raise UserError(f"missing artifact {path}") from None
    except Exception as e:  # pyarrow raises several types for damaged files
        raise UserError(f"{path}: unreadable Parquet ({type(e).__name__})") from None


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
        p = self.stage(name) / "manifest.json"
        if not p.is_file():
            return None
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            return None

    def key(self, name: str) -> str | None:
        m = self.manifest(name)
        return m.get("key") if m else None

    def is_done(self, name: str, key: str) -> bool:
        return self.key(name) == key

    def require(self, name: str) -> dict[str, Any]:
        m = self.manifest(name)
        if m is None:
            raise UserError(
                f"{self.stage(name)}: stage '{name}' has not run yet in {self.path} "
                f"(run `alignment {name} CONFIG --out {self.path}` or `alignment run CONFIG`)"
            )
        return m

    def read(self, name: str, file: str = "data.parquet") -> pd.DataFrame:
        """A stage's artifact. The runner checks manifests before a stage runs; reading does not,
        so a stage function can be called from Python on a run dir without any keys."""
        path = self.stage(name) / file
        if not path.is_file():
            raise UserError(f"{path}: stage '{name}' has not run yet in {self.path} "
                            f"(run `alignment {name} CONFIG --out {self.path}` or `alignment run CONFIG`)")
        return read_parquet(path)

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
        }
        write_json(self.stage(name) / "manifest.json", manifest)
        return manifest

    def invalidate(self, name: str) -> None:
        p = self.stage(name) / "manifest.json"
        if p.exists():
            p.unlink()
