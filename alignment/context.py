"""`Context`: what a stage function gets besides its own config section (see `alignment.runner`).

`alignment run CONFIG` builds one per stage: the run dir, the task object, the quiet flag, the
runner's stage key and the other config sections the stage declared. A stage records model ids
and extra manifest fields in `models` / `extra`; the runner writes the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import file_hash, keyed_dir
from alignment.config import config_hash, to_dict
from alignment.store import RunDir
from alignment.tasks import Task


@dataclass
class Context:
    """What a stage gets besides its own config section. `key` is set by the runner (shards
    resume only under the same key); called directly, a stage's shards are keyed by content."""

    run: RunDir
    task: Task
    quiet: bool = False
    key: str | None = None
    sections: Mapping[str, Any] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # recorded in the manifest
    extra: dict[str, Any] = field(default_factory=dict)  # recorded in the manifest

    def section(self, name: str) -> Any:
        if name not in self.sections:
            raise KeyError(f"config section {name!r} was not declared by this stage")
        return self.sections[name]

    def read(self, stage: str, file: str = "data.parquet") -> pd.DataFrame:
        return self.run.read(stage, file)

    def folder(self, stage: str) -> Path:
        return self.run.stage(stage)

    def input_id(self, stage: str) -> str:
        """An input's identity: its manifest key, or the hash of its data when it has none."""
        key = self.run.key(stage)
        if key is not None:
            return key
        path = self.run.stage(stage) / "data.parquet"
        return file_hash(path) if path.is_file() else "missing"

    def shards(self, stage: str, cfg: Any, inputs: tuple[str, ...], key: str | None = None) -> Path:
        """The stage's shard folder, emptied unless written under the same key (the runner's,
        or one hashed from `cfg` and the inputs' identities)."""
        if key is None:
            key = self.key or config_hash({"cfg": to_dict(cfg), "inputs": [self.input_id(i) for i in inputs]})
        return keyed_dir(self.run.stage(stage) / "shards", key)

    def log(self, message: str) -> None:
        if not self.quiet:
            from alignment.runtime.console import detail

            detail(message)  # the run log under `alignment run`, the console otherwise
