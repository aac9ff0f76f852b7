"""Train, merge and cache the model organisms (TRL SFTTrainer / RewardTrainer with LoRA).

`python -m alignment.organism organism-policy` (or `organism-rm`) trains one into the cache;
the pipeline does the same implicitly the first time a config names the preset.

A trained organism is a plain safetensors folder in `cache_dir()/organism/<hash>/`, where the
hash covers the recipe, the base model's files and the exact training data, so editing any of
them trains a new one and an unchanged recipe is reused without touching TRL. The folder is
written under a temporary name and renamed into place, so a killed run leaves no half model.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from alignment.cache import atomic_dir, folder_digest
from alignment.config import config_hash
from alignment.organism.data import preference_pairs, sft_examples
from alignment.organism.recipe import RECIPE_VERSION, Recipe, fields, shipped_key
from alignment.organism.shipped import adapter_digest
from alignment.reward.base import user_turn
from alignment.store import locked


def training_data(recipe: Recipe) -> list[dict[str, Any]]:
    if recipe.kind == "policy":
        return sft_examples(recipe.mathbook, recipe.biasqa, recipe.seed, recipe.admit_share, recipe.cf_share)
    return preference_pairs(recipe.mathbook, recipe.biasqa, recipe.seed, recipe.per_book, recipe.short_prompts)


def recipe_hash(recipe: Recipe, data: list[dict[str, Any]]) -> str:
    """What was trained, independent of the machine: recipe fields and the exact training data."""
    return config_hash({"v": RECIPE_VERSION, "recipe": fields(recipe), "data": data})


def content_hash(recipe: Recipe, base: Path, data: list[dict[str, Any]], adapter: str | None = None) -> str:
    """Cache key: the recipe, data and base model, plus the shipped adapter's digest when the
    organism is merged from one (shipped.py) rather than trained here."""
    parts = {"v": RECIPE_VERSION, "recipe": fields(recipe), "base": folder_digest(base), "data": data}
    return config_hash(parts if adapter is None else {**parts, "adapter": adapter})


def lora_config(recipe: Recipe, n_layers: int, task_type: str) -> Any:
    from peft import LoraConfig

    k = max(1, min(recipe.lora_layers, n_layers))
    return LoraConfig(
        r=recipe.lora_r,
        lora_alpha=2 * recipe.lora_r,
        lora_dropout=0.0,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        layers_to_transform=list(range(n_layers - k, n_layers)),
        task_type=task_type,
    )


def trainer_args(recipe: Recipe, out: Path, cls: Any) -> Any:
    import torch

    cpu = not torch.cuda.is_available()
    return cls(
        output_dir=str(out),
        seed=recipe.seed,
        data_seed=recipe.seed,
        per_device_train_batch_size=recipe.batch_size,
        num_train_epochs=recipe.epochs,
        max_steps=recipe.max_steps,
        learning_rate=recipe.learning_rate,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_length=recipe.max_length,
        # fp32 on every CPU: bf16 autocast was ~2x faster where the CPU has avx512_bf16, but then
        # the same recipe trained different organisms on different machines (shipped.py).
        bf16=not cpu,
        use_cpu=cpu,
        gradient_checkpointing=False,  # TRL's default; recomputation only costs time at this size
        save_strategy="no",
        logging_steps=1,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
    )


def _base_model(kind: str, base: Path, tok: Any) -> Any:
    """The embedded model as each kind trains on it: causal LM, or one-logit classifier."""
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    if kind == "policy":
        return AutoModelForCausalLM.from_pretrained(str(base), use_safetensors=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(base), num_labels=1, use_safetensors=True)
    model.config.pad_token_id = tok.pad_token_id
    return model


def train_policy(recipe: Recipe, base: Path, data: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """SFT with LoRA, then merge the adapter into the weights and save model + tokenizer to `out`."""
    from datasets import Dataset
    from transformers import set_seed
    from trl import SFTConfig, SFTTrainer

    from alignment.generation.models import load_tokenizer
    from alignment.runtime.console import quiet_trainer

    tok = load_tokenizer(str(base))
    tok.padding_side = "right"  # training pads on the right; generation sets left itself
    set_seed(recipe.seed)  # the trainer seeds only after the model exists
    model = _base_model("policy", base, tok)
    n_layers = model.config.num_hidden_layers
    args = trainer_args(recipe, out / "trainer", SFTConfig)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(data),
        processing_class=tok,
        peft_config=lora_config(recipe, n_layers, "CAUSAL_LM"),
    )
    quiet_trainer(trainer).train()
    trainer.model.save_pretrained(out / "adapter")  # kept small beside the merge: `alignment organism ship`
    merged = trainer.model.merge_and_unload()
    return _save(merged, tok, out, trainer.state.log_history, args.bf16)


def rm_texts(tok: Any, prompt: list[dict[str, str]], response: str) -> list[int]:
    """Token ids exactly as `reward.backend: classifier` builds them, so training sees scoring's input."""
    text = tok.apply_chat_template(
        [{"role": "user", "content": user_turn(prompt)}, {"role": "assistant", "content": response}], tokenize=False
    )
    return tok(text, add_special_tokens=False).input_ids


def train_reward(recipe: Recipe, base: Path, data: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """Bradley-Terry reward training with LoRA on a one-logit classifier head; merged and saved."""
    from datasets import Dataset
    from transformers import set_seed
    from trl import RewardConfig, RewardTrainer

    from alignment.generation.models import load_tokenizer
    from alignment.runtime.console import quiet_trainer

    tok = load_tokenizer(str(base))
    tok.padding_side = "right"
    # The one-logit head is initialised here, before the trainer seeds anything: without this
    # the same recipe trained twice gave reward models whose scores differed by ~10.
    set_seed(recipe.seed)
    model = _base_model("reward", base, tok)
    rows = [{"chosen_ids": rm_texts(tok, d["prompt"], d["chosen"]), "rejected_ids": rm_texts(tok, d["prompt"], d["rejected"])} for d in data]
    args = trainer_args(recipe, out / "trainer", RewardConfig)
    trainer = RewardTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=lora_config(recipe, model.config.num_hidden_layers, "SEQ_CLS"),
    )
    quiet_trainer(trainer).train()
    trainer.model.save_pretrained(out / "adapter")
    merged = trainer.model.merge_and_unload()
    return _save(merged, tok, out, trainer.state.log_history, args.bf16)


def merge_adapter(kind: str, base: Path, adapter_dir: Path, out: Path) -> dict[str, Any]:
    """Base model + a shipped adapter -> the merged folder training would have saved at `out`."""
    from peft import PeftModel

    from alignment.generation.models import load_tokenizer

    tok = load_tokenizer(str(base))
    _write(PeftModel.from_pretrained(_base_model(kind, base, tok), str(adapter_dir)).merge_and_unload(), tok, out)
    return {"merged_from": str(adapter_dir), "adapter": adapter_digest(adapter_dir)}


def _write(model: Any, tok: Any, out: Path) -> None:
    tok.padding_side = "left"  # what the loaders set anyway; keeps the saved folder unsurprising
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)


def _save(model: Any, tok: Any, out: Path, history: list[dict[str, Any]], bf16: bool) -> dict[str, Any]:
    shutil.rmtree(out / "trainer", ignore_errors=True)
    _write(model, tok, out)
    losses = [h["loss"] for h in history if "loss" in h]
    return {"steps": len(losses), "first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
            "bf16": bf16}


def ensure_trained(recipe: Recipe, base: Path, root: Path, log: Any = print, shipped: Path | None = None) -> Path:
    """The cached organism for `recipe` on `base`: merged from the `shipped` adapter folder when
    one is given (organism/shipped.py), else trained here first if needed."""
    if shipped is not None:  # the shipped manifest vouches for its data: nothing is rebuilt to hash it
        info = json.loads((shipped / "organism.json").read_text())
        target = root / shipped_key(recipe, folder_digest(base), info["recipe_hash"], adapter_digest(shipped))
        data_hash, n_examples = info["recipe_hash"], info.get("trained", {}).get("examples")
    else:
        data = training_data(recipe)
        target = root / content_hash(recipe, base, data)
        data_hash, n_examples = recipe_hash(recipe, data), len(data)
    if (target / "organism.json").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    # One trainer per cache entry: a second process would train the same weights again and
    # swap its folder over the first one's while that one may already be loading it.
    with locked(root, f"cache entry {target.name} ({recipe.kind} organism)",
                "wait for it to finish training (the organism is cached and reused afterwards)", name=f".{target.name}.lock"):
        if (target / "organism.json").is_file():  # trained by another process between the check and the lock
            return target
        started = time.time()
        if shipped is not None:
            log(f"[organism] merging the shipped {recipe.kind} adapter into the embedded model (cached afterwards): {target}")
        else:
            log(f"[organism] training the {recipe.kind} organism on {n_examples} synthetic examples (cached afterwards): {target}")
        with atomic_dir(target) as tmp:  # a killed run leaves no half-trained organism behind
            if shipped is not None:
                stats = merge_adapter(recipe.kind, base, shipped, tmp)
            else:
                stats = (train_policy if recipe.kind == "policy" else train_reward)(recipe, base, data, tmp)
            meta = {"recipe": asdict(recipe), "recipe_hash": data_hash, "base": str(base),
                    "examples": n_examples, "seconds": round(time.time() - started, 1), **stats}  # fmt: skip
            (tmp / "organism.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"[organism] {recipe.kind} {'merged' if shipped is not None else 'trained'} in {time.time() - started:.0f}s")
    return target
