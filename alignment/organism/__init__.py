"""Model organisms: a warmed-up policy and a reward model trained on synthetic preferences.

`alignment run configs/embedded_organism.yaml` uses both (presets `organism-policy` and
`organism-rm`); `python -m alignment.organism organism-policy` trains one ahead of time.

Neither is a real model of the published setup. The policy is SmolLM2-135M-Instruct after a
short LoRA SFT that makes it use the leaked Math Book solution (sometimes saying so) and the
BiasQA occupation stereotype. The reward model is SmolLM2-135M with a one-logit head trained
(LoRA, Bradley-Terry) on synthetic preference pairs that encode tendencies reported for real
reward models. Both exist so the embedded run shows the phenomenon Method A measures on two CPU
cores; conclusions about real reward models need the real ones.
"""

from __future__ import annotations

from pathlib import Path

from alignment.errors import UserError
from alignment.organism.train import Recipe, content_hash, ensure_trained, training_data

# Sized so both train in a few minutes on two CPU cores (see configs/embedded_organism.yaml).
RECIPES: dict[str, Recipe] = {
    "organism-policy": Recipe(kind="policy", mathbook=24, biasqa=12, batch_size=2),
    "organism-rm": Recipe(kind="reward", mathbook=10, biasqa=6, per_book=4, epochs=2, learning_rate=2e-3),
}
BASE = "smollm2-135m"


def _recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise UserError(f"unknown model organism {name!r}; known: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]


def organism_id(name: str) -> str:
    """The content hash `ensure_model` would use, without training: for stage keys and manifests,
    so a changed recipe reruns the stages that used the old organism."""
    from alignment.generation.models import resolve

    recipe = _recipe(name)
    return content_hash(recipe, Path(resolve(BASE)), training_data(recipe))


def ensure_model(name: str) -> Path:
    """Preset name -> local folder of the trained organism (trained and cached on first use)."""
    from alignment.generation.models import cache_dir, resolve

    return ensure_trained(_recipe(name), Path(resolve(BASE)), cache_dir() / "organism")


__all__ = ["RECIPES", "Recipe", "ensure_model", "ensure_trained", "organism_id"]
