"""Model names → what to load: a preset, a trained model organism, a hub id or a local folder.

`generation.model: organism-policy`, `reward.model: skywork-reward-llama-3.1-8b-v0.2` or any
hub id / path in a config (`alignment run CONFIG`) resolve here. Resolution is a pure lookup: it
never trains. A model organism is built (merged from its shipped adapter, or trained) by `alignment organism train NAME` (and by
`alignment run`, before its stages, for the organisms a config names).
"""

from __future__ import annotations

from alignment.errors import UserError
from alignment.generation.models import EMBEDDED, PRESETS, embedded_model_dir


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
    if name == EMBEDDED:
        return str(embedded_model_dir())
    return name
