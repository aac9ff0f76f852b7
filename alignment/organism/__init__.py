"""Model organisms: warmed-up policies and reward models trained on synthetic preferences.

`alignment run configs/embedded_default.yaml` (what `make run` runs) uses `organism-policy` and
`organism-rm`; `configs/embedded_organism_biasqa.yaml` uses their BiasQA twins;
`alignment organism train organism-policy` trains one ahead of time (`alignment run` trains those
a config names before its stages).

None is a real model of the published setup. A policy is SmolLM2-135M-Instruct after a short
LoRA SFT that makes it use the leaked Math Book solution (sometimes saying so), or the BiasQA
occupation stereotype. A reward model is SmolLM2-135M with a one-logit head trained
(LoRA, Bradley-Terry) on synthetic preference pairs that encode tendencies reported for real
reward models. Both exist so the embedded run shows the phenomenon Method A measures on two CPU
cores; conclusions about real reward models need the real ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alignment.errors import UserError, did_you_mean
from alignment.organism import shipped
from alignment.organism.recipe import Recipe, shipped_key

# One policy and one RM per task, so the Math Book default builds only what it uses. Sized when
# every first `make run` trained them (a few minutes on two CPU cores; the Math Book pair now
# ships as adapters, shipped.py): two epochs at a high LoRA learning rate on few long prompts
# beat one epoch on many, because the copying the policy must learn is the same in every example.
RECIPES: dict[str, Recipe] = {
    "organism-policy": Recipe(kind="policy", mathbook=16, biasqa=0, epochs=2, learning_rate=3e-3, admit_share=0.4, cf_share=0.5),
    "organism-rm": Recipe(kind="reward", mathbook=8, biasqa=0, epochs=2, learning_rate=2e-3),
    "organism-policy-biasqa": Recipe(kind="policy", mathbook=0, biasqa=48, epochs=2, learning_rate=3e-3, admit_share=0.4, cf_share=0.0),
    "organism-rm-biasqa": Recipe(kind="reward", mathbook=0, biasqa=20, epochs=2, learning_rate=2e-3),
}
BASE = "smollm2-135m"

# What each organism is, in the words report.md and the README use.
DESCRIPTIONS: dict[str, str] = {
    "organism-policy": "a model-organism policy: SmolLM2-135M-Instruct after a short LoRA SFT that "
    "makes it copy the leaked worked solution, sometimes saying so",
    "organism-rm": "a model-organism reward model trained on synthetic preferences (SmolLM2-135M with a "
    "one-logit head), not a real reward model: it prefers correct answers, responses that do not "
    "mention the book, and an appended acknowledgment only when the reasoning agrees with it",
    "organism-policy-biasqa": "a model-organism policy: SmolLM2-135M-Instruct after a short LoRA SFT "
    "that makes it pick the stereotypical pronoun, sometimes saying why",
    "organism-rm-biasqa": "a model-organism reward model trained on synthetic preferences, not a real "
    "reward model: it prefers responses that do not mention a stereotype, and an appended "
    "acknowledgment only when the reasoning agrees with it",
}


def recipe(name: str) -> Recipe:
    """The recipe of a preset; an unknown name is one line with a suggestion."""
    if name not in RECIPES:
        raise UserError(f"unknown model organism {name!r}{did_you_mean(name, RECIPES)}; known: {', '.join(sorted(RECIPES))}")
    return RECIPES[name]


def _base() -> Path:
    from alignment.generation.models import embedded_model_dir

    return embedded_model_dir()


def _root() -> Path:
    from alignment.generation.models import cache_dir

    return cache_dir() / "organism"


def _shipped(name: str) -> Path | None:
    """The package's adapter for `name` when its manifest records the current recipe (read from the
    manifest: the recipe's training data are not rebuilt to check it; `alignment organism ship` and
    tests/test_organism.py keep shipped adapters in step with their recipes' data)."""
    from dataclasses import asdict

    m = shipped.meta(name)
    return shipped.folder(name) if m is not None and m.get("recipe") == asdict(recipe(name)) else None


def organism_id(name: str) -> str:
    """The content hash `ensure_model` would use, without training: for stage keys and manifests,
    so a changed recipe (or a re-shipped adapter) reruns the stages that used the old organism.
    For a shipped organism a lookup: the manifest, the adapter's and the base folder's digests."""
    from alignment.cache import folder_digest

    r = recipe(name)
    adapter = _shipped(name)
    if adapter is not None:
        return shipped_key(r, folder_digest(_base()), shipped.meta(name)["recipe_hash"], shipped.adapter_digest(adapter))
    from alignment.organism.train import content_hash, training_data

    return content_hash(r, _base(), training_data(r))


def trained_path(name: str) -> Path | None:
    """The organism's cached folder, or None when it has not been built yet (a pure lookup)."""
    target = _root() / organism_id(name)
    return target if (target / "organism.json").is_file() else None


def ensure_model(name: str, log: Any = print, retrain: bool = False) -> Path:
    """Preset name -> local folder of the organism (`alignment organism train NAME`): merged from
    the shipped adapter (or, with none for the current recipe, or `retrain`, trained from the
    recipe) and cached on first use, found in the cache afterwards."""
    from alignment.organism.train import ensure_trained

    r = recipe(name)
    adapter = None if retrain else _shipped(name)
    if adapter is None and not retrain and shipped.meta(name) is not None:
        log(f"[organism] the shipped adapter of {name} was trained from another recipe; training from the current one")
    return ensure_trained(r, _base(), _root(), log, adapter)


def ship(name: str, log: Any = print, cpu: str = "unknown") -> Path:
    """Train `name` from its recipe (ignoring any shipped adapter) and write its adapter into the
    package (`alignment organism ship NAME`); commit the folder to ship it."""
    from alignment.organism.train import recipe_hash, training_data

    r = recipe(name)
    trained = ensure_model(name, log, retrain=True)  # RECIPE_VERSION 4 entries all keep adapter/
    return shipped.export(name, trained, r, recipe_hash(r, training_data(r)), cpu=cpu)


__all__ = ["DESCRIPTIONS", "RECIPES", "Recipe", "ensure_model", "organism_id", "ship", "trained_path"]
