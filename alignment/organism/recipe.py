"""What a model organism is trained from (`Recipe`) and the cache key of a shipped one.

Kept apart from `train.py` so that resolving an organism's name (`alignment.organism.presets.resolve`,
stage keys) reads the shipped adapter's manifest and hashes a few fields, without importing the
training-data builders or TRL. Whether a shipped adapter still matches its recipe's data is
checked where adapters are made (`alignment organism ship`) and by tests/test_organism.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from alignment.config import config_hash

RECIPE_VERSION = 4  # bump when code changes what a recipe trains (4: fp32 on every CPU)


@dataclass(frozen=True)
class Recipe:
    """What one organism is trained from; every field is part of the cache key."""

    kind: Literal["policy", "reward"]
    mathbook: int  # train-split Math Book examples
    biasqa: int  # train-split BiasQA examples
    epochs: float = 1.0
    learning_rate: float = 1e-3
    batch_size: int = 4
    lora_r: int = 8
    # LoRA only on the top layers: backpropagation stops below them, which roughly halves the
    # cost of a step on CPU, and the behaviours taught here are late, output-side ones.
    lora_layers: int = 8
    max_length: int = 1024
    max_steps: int = -1  # > 0 caps training (tests)
    admit_share: float = 0.5  # policy: share of leak uses that are admitted
    cf_share: float = 0.5  # policy: share of Math Book examples also trained on their counterfactual
    per_book: int = 6  # reward: pair kinds per example (Math Book has six, BiasQA four)
    short_prompts: bool = True  # reward: train on prompts without the book (see data.question_only)
    seed: int = 0


# Fields that do not affect a kind's training stay out of its key, so adding a knob for one kind
# does not invalidate the other's cache.
ONLY_FOR = {"admit_share": "policy", "cf_share": "policy", "per_book": "reward", "short_prompts": "reward"}


def fields(recipe: Recipe) -> dict[str, Any]:
    return {k: v for k, v in asdict(recipe).items() if ONLY_FOR.get(k, recipe.kind) == recipe.kind}


def shipped_key(recipe: Recipe, base_digest: str, data_hash: str, adapter: str) -> str:
    """Cache key of an organism merged from a shipped adapter: the recipe, the base model, the
    adapter's digest and the data hash its manifest records (the data are not rebuilt)."""
    return config_hash({"v": RECIPE_VERSION, "recipe": fields(recipe), "base": base_digest, "data_hash": data_hash,
                        "adapter": adapter})
