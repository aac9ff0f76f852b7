"""Model names → what to load: a preset, a trained model organism, a hub id or a local folder.

`generation.model: organism-policy`, `reward.model: skywork-reward-llama-3.1-8b-v0.2` or any
hub id / path in a config (`alignment run CONFIG`) resolve here: the stages hand `with_paths(section)`
to the backends they build, so generation, reward and DPO load folders and hub ids and never read
the organisms trained on top of them. Resolution is a pure lookup: it never trains. A model organism is built (merged from its shipped adapter, or trained) by `alignment organism train NAME` (and by
`alignment run`, before its stages, for the organisms a config names).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import TypeVar

from alignment.errors import UserError
from alignment.generation.models import PRESETS, model_path

T = TypeVar("T")


def resolve(name: str) -> str:
    """Preset name → local folder (embedded, organism) or hub id; other names pass through."""
    name = PRESETS.get(name, name)
    if name.startswith("organism-"):
        from alignment.organism import trained_path

        path = trained_path(name)
        if path is None:
            raise UserError(f"model organism {name!r} is not trained yet: run `alignment organism train {name}` "
                            "(`alignment run CONFIG` trains the organisms its config names)")
        return str(path)
    return model_path(name)


def with_paths(section: T) -> T:
    """A config section with each model organism's name replaced by its folder, for the backend
    the stage builds from it. The stage keeps the section it was given, so stage keys and
    manifests go on naming the organism (its key hashes the organism's content, not a folder)."""
    changes = {f.name: resolve(v) for f in fields(section)  # type: ignore[arg-type]
               if isinstance(v := getattr(section, f.name), str) and PRESETS.get(v, v).startswith("organism-")}
    return replace(section, **changes) if changes else section  # type: ignore[type-var]
