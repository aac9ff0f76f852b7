"""Organisms that ship with the package as LoRA adapters (`alignment/organism/adapters/<name>/`).

Training an organism on first use made the first `make run` spend six of its minutes in TRL,
and made the organism depend on the machine: bf16 autocast on CPUs with native bf16, fp32
elsewhere, so two machines with the same recipe hash trained different weights. A shipped
organism is the LoRA adapter (a few MB) that `alignment organism ship NAME` trained from the
recipe once; on first use train.merge_adapter merges it into the embedded model, cached like a trained one,
so every machine runs the same weights.

The adapter is used only while its `recipe_hash` (recipe fields + the exact training data, no
machine-specific part) equals the current recipe's. A changed recipe or training set falls back
to training on first use, with a log line saying so, and `tests/test_organism.py` fails until
the adapter is shipped again.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from alignment.cache import atomic_dir

SHIPPED_DIR = Path(__file__).resolve().parent / "adapters"
ADAPTER_FILE = "adapter_model.safetensors"
META = "organism.json"


def folder(name: str, root: Path | None = None) -> Path:
    return (root or SHIPPED_DIR) / name


def meta(name: str, root: Path | None = None) -> dict[str, Any] | None:
    """The shipped adapter's metadata, or None when `name` ships no adapter."""
    path = folder(name, root) / META
    if not (path.is_file() and (path.parent / ADAPTER_FILE).is_file()):
        return None
    return json.loads(path.read_text())


def adapter_digest(adapter_dir: Path) -> str:
    """Identity of an adapter: the bytes of its weights and its config."""
    h = hashlib.sha256()
    for name in (ADAPTER_FILE, "adapter_config.json"):
        h.update((adapter_dir / name).read_bytes())
    return h.hexdigest()[:16]


def usable(name: str, recipe_hash: str, root: Path | None = None) -> Path | None:
    """The shipped adapter folder when it was trained from exactly this recipe and data, else None."""
    m = meta(name, root)
    return folder(name, root) if m is not None and m.get("recipe_hash") == recipe_hash else None


def export(name: str, trained: Path, recipe: Any, recipe_hash: str, root: Path | None = None, cpu: str = "unknown") -> Path:
    """Copy a freshly trained cache entry's adapter into the package, with its provenance (`cpu`:
    the machine's CPU model, passed in because alignment.measure.bench imports this package)."""
    import peft
    import torch
    import transformers
    import trl

    src = trained / "adapter"
    if not (src / ADAPTER_FILE).is_file():
        raise FileNotFoundError(f"{trained}: no adapter/ folder (trained before adapters were kept); retrain it")
    trained_meta = json.loads((trained / META).read_text())
    target = folder(name, root)
    with atomic_dir(target) as tmp:
        shutil.copyfile(src / ADAPTER_FILE, tmp / ADAPTER_FILE)
        config = json.loads((src / "adapter_config.json").read_text())
        config["base_model_name_or_path"] = "smollm2-135m"  # the preset, not this machine's cache path
        (tmp / "adapter_config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        info = {
            "name": name,
            "recipe_hash": recipe_hash,
            "recipe": asdict(recipe),
            "adapter": adapter_digest(tmp),
            "trained": {k: trained_meta.get(k) for k in ("examples", "seconds", "steps", "first_loss", "last_loss", "bf16")},
            "machine": {"cpu": cpu, "python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__, "trl": trl.__version__, "peft": peft.__version__},
            "date": time.strftime("%Y-%m-%d"),
        }  # fmt: skip
        (tmp / META).write_text(json.dumps(info, indent=2) + "\n")
    return target
