"""LoRA SFT of a causal LM on prompt -> completion pairs, and greedy batched prediction.

The `sft` learner of the ReasonBench experiments (`alignment run configs/reasonbench_*.yaml`)
calls `train` once per target and seed, then `predict` on every evaluation split. Training is
TRL's `SFTTrainer` with a PEFT LoRA adapter and the loss on the completion only (TRL's
prompt-completion format); batches group cases of similar length, so little compute goes to
padding. Prediction is `model.generate` (greedy) over length-sorted, left-padded batches.

Files under `out_dir`:

- `checkpoints/checkpoint-N/`: TRL checkpoints every `save_steps` steps (adapter, optimizer,
  scheduler, RNG states); `train` resumes from the newest complete one. The folder carries a
  key (model, recipe, seed, data) and is emptied when the key changes.
- `adapter/`: the finished adapter, its tokenizer and `sft.json` (the stats `train` returned
  and the key), written under a temporary name and renamed into place. Once it exists with the
  same key, `train` returns its stats without touching TRL; the checkpoints are then deleted.

The prompt is the user turn and the completion the assistant turn of the model's chat template
(`enable_thinking=False`, so Qwen3 templates render an empty thought block in both places);
a tokenizer without a template sees the prompt text followed by a newline.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from alignment.cache import atomic_dir, folder_digest, keyed_dir
from alignment.config import check, check_device, config_hash, doc
from alignment.errors import UserError
from alignment.generation.models import load_model, load_tokenizer, pick_device, resolve_dtype
from alignment.organism.presets import resolve
from alignment.runtime.checkpoints import complete_checkpoint
from alignment.runtime.console import detail, quiet_trainer

VERSION = 1  # bump when code changes what a recipe trains
DTYPES = ("auto", "float32", "bfloat16", "float16")
SCHEDULERS = ("linear", "constant", "cosine")
# Fields that only affect prediction or bookkeeping: changing them keeps a trained adapter.
NOT_IN_KEY = ("eval_batch_size", "max_new_tokens", "save_steps")
# Template kwargs for training and prediction alike; templates that do not use them ignore them.
TEMPLATE_KWARGS = {"enable_thinking": False}
# End-of-turn tokens of common templates, stopping generation besides the model's eos ids.
END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>")


@dataclass(frozen=True)
class SFTConfig:
    """The LoRA SFT recipe and its decoding settings (every field validated on construction)."""

    model: str = doc("Preset name (alignment/organism/presets.py), local folder or hub id of the causal LM.", "smollm2-135m")
    lora_r: int = doc("LoRA rank.", 16)
    lora_alpha: int = doc("LoRA scale numerator (the update is scaled by alpha / r).", 32)
    lora_dropout: float = doc("Dropout on the LoRA input, in [0, 1).", 0.0)
    target_modules: tuple[str, ...] = doc("Module names given LoRA adapters.", ("q_proj", "k_proj", "v_proj", "o_proj"))
    lora_layers: int = doc("> 0: adapters only in the top N layers, so backpropagation stops below them "
                           "(a cheaper step on CPU); 0 = every layer.", 0)
    learning_rate: float = doc("Peak AdamW learning rate.", 2e-4)
    epochs: float = doc("Passes over the training cases (ignored when max_steps > 0).", 1.0)
    max_steps: int = doc("> 0: stop after this many optimizer steps; -1 = run the epochs.", -1)
    batch_size: int = doc("Training cases per forward pass.", 8)
    grad_accum: int = doc("Forward passes per optimizer step.", 1)
    max_length: int = doc("Tokens per training sequence; a longer one keeps its start (TRL drops a case "
                          "whose prompt alone fills it; stats['dropped'] counts them).", 1024)
    group_by_length: bool = doc("Batch training cases of similar length together (less padding).", True)
    eval_batch_size: int = doc("Prompts per generation batch (batches are length-sorted).", 16)
    max_new_tokens: int = doc("Generation budget per prediction.", 64)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = doc(
        "Weights and autocast dtype; auto = bf16 on CUDA or a CPU with native bf16, else fp32 (as generation.dtype).", "auto")
    save_steps: int = doc("Checkpoint every this many steps, so an interrupted run resumes.", 50)
    device: str = doc("auto, cpu, cuda or cuda:N.", "auto")
    lr_scheduler: Literal["linear", "constant", "cosine"] = doc("Learning-rate decay after warmup.", "linear")
    warmup_ratio: float = doc("Share of the steps spent warming the learning rate up, in [0, 1).", 0.0)
    gradient_checkpointing: bool = doc("Recompute activations in the backward pass: less memory, more time.", False)

    def __post_init__(self) -> None:
        if isinstance(self.target_modules, list):  # YAML gives lists
            object.__setattr__(self, "target_modules", tuple(self.target_modules))
        check(isinstance(self.model, str) and bool(self.model.strip()), "model", "must be a non-empty name or path")
        check(self.lora_r >= 1, "lora_r", f"must be >= 1, got {self.lora_r}")
        check(self.lora_layers >= 0, "lora_layers", f"must be >= 0 (0 = every layer), got {self.lora_layers}")
        check(self.lora_alpha > 0, "lora_alpha", f"must be > 0, got {self.lora_alpha}")
        check(0 <= self.lora_dropout < 1, "lora_dropout", f"must be in [0, 1), got {self.lora_dropout}")
        check(bool(self.target_modules) and all(isinstance(m, str) and m for m in self.target_modules),
              "target_modules", "must be a non-empty list of module names")
        check(self.learning_rate > 0, "learning_rate", f"must be > 0, got {self.learning_rate}")
        check(self.epochs > 0, "epochs", f"must be > 0, got {self.epochs}")
        check(self.max_steps == -1 or self.max_steps >= 1, "max_steps", f"must be -1 or >= 1, got {self.max_steps}")
        for name in ("batch_size", "grad_accum", "eval_batch_size", "max_new_tokens", "save_steps"):
            check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        check(self.max_length >= 16, "max_length", f"must be >= 16, got {self.max_length}")
        check(self.dtype in DTYPES, "dtype", f"must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        check(self.lr_scheduler in SCHEDULERS, "lr_scheduler",
              f"must be one of {', '.join(SCHEDULERS)}, got {self.lr_scheduler!r}")
        check(0 <= self.warmup_ratio < 1, "warmup_ratio", f"must be in [0, 1), got {self.warmup_ratio}")
        check_device(self.device)


# ------------------------------------------------------------------------------------ templates


def has_template(tok: Any) -> bool:
    return bool(getattr(tok, "chat_template", None))


def example(tok: Any, prompt: str, completion: str) -> dict[str, Any]:
    """One training row in TRL's prompt-completion format (conversational when there is a template)."""
    if has_template(tok):
        return {"prompt": [{"role": "user", "content": prompt}],
                "completion": [{"role": "assistant", "content": completion}],
                "chat_template_kwargs": TEMPLATE_KWARGS}
    return {"prompt": prompt + "\n", "completion": completion}


def prompt_ids(tok: Any, prompt: str) -> list[int]:
    """The prompt's token ids exactly as TRL tokenizes the prompt part of `example` for training."""
    if has_template(tok):
        out = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=True, return_dict=True,
                                      add_generation_prompt=True, **TEMPLATE_KWARGS)
        return list(out["input_ids"])
    return list(tok(text=prompt + "\n")["input_ids"])


def stop_ids(tok: Any, model: Any) -> list[int]:
    """Token ids that end a completion: the model's eos ids, the tokenizer's, and end-of-turn tokens."""
    eos = model.generation_config.eos_token_id
    ids = set(eos if isinstance(eos, list) else [eos]) | {tok.eos_token_id}
    vocab = tok.get_vocab()
    ids |= {vocab[t] for t in END_OF_TURN if t in vocab}
    return sorted(i for i in ids if i is not None)


# ------------------------------------------------------------------------------------- training


def _check_data(prompts: list[str], completions: list[str]) -> None:
    if not prompts:
        raise UserError("sft: no training cases (prompts is empty)")
    if len(prompts) != len(completions):
        raise UserError(f"sft: {len(prompts)} prompts but {len(completions)} completions")
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        if not isinstance(p, str) or not isinstance(c, str) or not c:
            raise UserError(f"sft: training case {i}: prompt and completion must be strings, completion non-empty")


def recipe_key(cfg: SFTConfig, path: str, prompts: list[str], completions: list[str], seed: int) -> str:
    """What the adapter depends on: code version, recipe, base model (files if local), data, seed."""
    recipe = {k: v for k, v in asdict(cfg).items() if k not in NOT_IN_KEY}
    recipe["dtype"] = resolve_dtype(cfg.dtype, cfg.device)[0]  # auto differs between machines
    base = folder_digest(Path(path)) if Path(path).is_dir() else path
    return config_hash({"v": VERSION, "recipe": recipe, "base": base, "seed": seed,
                        "data": config_hash([prompts, completions])})


def last_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint (`alignment.runtime.checkpoints`); incomplete ones are removed."""
    return complete_checkpoint(folder)


def trainer_args(cfg: SFTConfig, out: Path, seed: int, dtype: str) -> Any:
    from trl import SFTConfig as TRLConfig

    cpu = pick_device(cfg.device) == "cpu"
    return TRLConfig(
        output_dir=str(out), seed=seed, data_seed=seed,
        per_device_train_batch_size=cfg.batch_size, gradient_accumulation_steps=cfg.grad_accum,
        num_train_epochs=cfg.epochs, max_steps=cfg.max_steps, learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler, warmup_steps=cfg.warmup_ratio,  # a float < 1 is a ratio
        max_length=cfg.max_length, completion_only_loss=True,
        train_sampling_strategy="group_by_length" if cfg.group_by_length else "random",
        bf16=dtype == "bfloat16", fp16=dtype == "float16", use_cpu=cpu,
        gradient_checkpointing=cfg.gradient_checkpointing,
        save_strategy="steps", save_steps=cfg.save_steps, save_total_limit=2,
        include_num_input_tokens_seen="non_padding",
        logging_steps=1, report_to="none", disable_tqdm=True, dataloader_num_workers=0,
    )


def build_trainer(cfg: SFTConfig, path: str, prompts: list[str], completions: list[str], out: Path, seed: int) -> Any:
    """The SFTTrainer for one run (model loaded and seeded, dataset tokenized by TRL)."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, set_seed
    from trl import SFTTrainer

    dtype = resolve_dtype(cfg.dtype, cfg.device)[0]
    tok = load_tokenizer(path)
    tok.padding_side = "right"
    set_seed(seed)  # LoRA weights are initialised when the trainer wraps the model
    model = load_model(AutoModelForCausalLM, path, dtype, cfg.device)
    n = model.config.num_hidden_layers
    top = list(range(max(0, n - cfg.lora_layers), n)) if cfg.lora_layers else None
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=list(cfg.target_modules), layers_to_transform=top, task_type="CAUSAL_LM")
    rows = [example(tok, p, c) for p, c in zip(prompts, completions, strict=True)]
    return SFTTrainer(model=model, args=trainer_args(cfg, out, seed, dtype), train_dataset=Dataset.from_list(rows),
                      processing_class=tok, peft_config=lora)


def finished(out_dir: Path, key: str | None = None) -> dict[str, Any] | None:
    """The saved stats of the finished adapter in out_dir (under `key`, when given), else None."""
    try:
        meta = json.loads((Path(out_dir) / "adapter" / "sft.json").read_text())
    except (OSError, ValueError):
        return None
    return meta["stats"] if key is None or meta.get("key") == key else None


def train(cfg: SFTConfig, prompts: list[str], completions: list[str], out_dir: Path, seed: int) -> dict[str, Any]:
    """LoRA SFT (TRL SFTTrainer + PEFT, loss on the completion only) of cfg.model on
    prompt -> completion; resumes from the newest checkpoint in out_dir; when out_dir already
    holds a finished adapter of the same recipe, data and seed, returns its saved stats without
    training. Writes the adapter atomically to out_dir/adapter. Returns stats: train_tokens
    (non-padding tokens over the whole training), train_seconds and train_tokens_per_s (this
    call's training only), steps, resumed_from (checkpoint path or None), dtype, and examples,
    dropped (cases whose prompt alone filled max_length), first_loss, last_loss."""
    _check_data(prompts, completions)
    out_dir = Path(out_dir)
    path = resolve(cfg.model)
    key = recipe_key(cfg, path, prompts, completions, seed)
    done = finished(out_dir, key)
    if done is not None:
        return done
    ckpts = keyed_dir(out_dir / "checkpoints", key)
    trainer = build_trainer(cfg, path, prompts, completions, ckpts, seed)
    resume = last_checkpoint(ckpts)
    tokens_before = json.loads((resume / "trainer_state.json").read_text()).get("num_input_tokens_seen", 0) if resume else 0
    detail(f"[sft] {cfg.model}: {len(prompts)} cases, seed {seed}" + (f", resuming from {resume.name}" if resume else ""))
    started = time.perf_counter()
    quiet_trainer(trainer).train(resume_from_checkpoint=str(resume) if resume else None)
    seconds = time.perf_counter() - started
    state = trainer.state
    losses = [h["loss"] for h in state.log_history if "loss" in h]
    stats = {
        "train_tokens": int(state.num_input_tokens_seen),
        "train_seconds": round(seconds, 3),
        "train_tokens_per_s": round((state.num_input_tokens_seen - tokens_before) / max(seconds, 1e-9), 1),
        "steps": int(state.global_step),
        "resumed_from": str(resume) if resume else None,
        "dtype": resolve_dtype(cfg.dtype, cfg.device)[0],
        "examples": len(prompts),
        "dropped": len(prompts) - len(trainer.train_dataset),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
    }
    with atomic_dir(out_dir / "adapter") as tmp:  # a killed run leaves no half adapter behind
        trainer.model.save_pretrained(tmp, safe_serialization=True)
        trainer.processing_class.save_pretrained(tmp)
        (tmp / "sft.json").write_text(json.dumps({"key": key, "stats": stats}, indent=2) + "\n")
    shutil.rmtree(ckpts, ignore_errors=True)  # the adapter supersedes them
    return stats


# ----------------------------------------------------------------------------------- prediction


def load_merged(cfg: SFTConfig, out_dir: Path) -> tuple[Any, Any]:
    """The base model with the adapter in out_dir merged in (faster decoding), and the tokenizer."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    adapter = Path(out_dir) / "adapter"
    if finished(out_dir) is None:
        raise UserError(f"sft: no finished adapter in {adapter} (train first)")
    dtype = resolve_dtype(cfg.dtype, cfg.device)[0]
    base = load_model(AutoModelForCausalLM, resolve(cfg.model), dtype, cfg.device)
    model = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload().eval()
    tok = load_tokenizer(str(adapter))
    return model, tok


def predict(cfg: SFTConfig, out_dir: Path, prompts: list[str]) -> tuple[list[str], dict[str, Any]]:
    """Greedy, batched (length-sorted, left padding) decoding with the adapter in out_dir; returns
    the raw completions (special tokens removed, whitespace stripped) in input order and
    {"cases": n, "seconds": s, "cases_per_s": r, "new_tokens": t, "load_seconds": l, "dtype": d}."""
    import torch
    from transformers import GenerationConfig

    started = time.perf_counter()
    model, tok = load_merged(cfg, out_dir)
    load_seconds = time.perf_counter() - started
    stop = stop_ids(tok, model)
    gen = GenerationConfig(do_sample=False, max_new_tokens=cfg.max_new_tokens, eos_token_id=stop,
                           pad_token_id=tok.pad_token_id)
    ids = [prompt_ids(tok, p) for p in prompts]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))  # longest first: memory peaks at once
    out: list[str] = [""] * len(ids)
    new_tokens = 0
    started = time.perf_counter()
    for start in range(0, len(order), cfg.eval_batch_size):
        chunk = order[start : start + cfg.eval_batch_size]
        batch = tok.pad({"input_ids": [ids[i] for i in chunk]}, padding_side="left", return_tensors="pt").to(model.device)
        with torch.inference_mode():
            seqs = model.generate(**batch, generation_config=gen)
        for i, row in zip(chunk, seqs[:, batch["input_ids"].shape[1] :].tolist(), strict=True):
            row = row[: next((j for j, t in enumerate(row) if t in stop), len(row))]
            new_tokens += len(row)
            out[i] = tok.decode(row, skip_special_tokens=True).strip()
    seconds = time.perf_counter() - started
    stats = {"cases": len(prompts), "seconds": round(seconds, 3), "cases_per_s": round(len(prompts) / max(seconds, 1e-9), 3),
             "new_tokens": new_tokens, "load_seconds": round(load_seconds, 3), "dtype": str(model.dtype).removeprefix("torch.")}
    return out, stats
