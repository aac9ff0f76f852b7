"""LoRA DPO with TRL, one run per reward variant and seed (`alignment dpo-train`, `alignment.stages.dpo_train`).

Reads `dpo-pairs/<variant>/{train,valid}.parquet`; writes `dpo-train/<variant>-seed<k>/` with
`checkpoints/` (only the best survives), `adapter/` (the best checkpoint's LoRA adapter,
`adapter_config.json` + weights) and `result.json` (the done marker, written last). The
reference model is the base model with the adapter disabled (TRL does this when it gets a
`peft_config` and no `ref_model`), so there is a single copy of the weights. Rerunning the same
command after an interruption resumes from the newest complete checkpoint; a finished run is skipped.
Multi-GPU: `jobs/dpo_multi_gpu.sh` (accelerate + DeepSpeed ZeRO-2/3).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import atomic_dir, keyed_dir, read_key
from alignment.config import config_hash
from alignment.dpo.config import DPOConfig
from alignment.dpo.reference import RefStore, shared_ref_trainer
from alignment.runtime.checkpoints import complete_checkpoint
from alignment.store import write_json

CKPT_RE = re.compile(r"^checkpoint-(\d+)$")
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
EVAL_ACC, EVAL_LOSS = "eval_rewards/accuracies", "eval_loss"


def run_name(variant: str, seed: int) -> str:
    return f"{variant}-seed{seed}"


def is_main_process() -> bool:
    return os.environ.get("RANK", "0") == "0"


def pick_device(device: str) -> str:
    import torch

    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


def checkpoints(ckpt_dir: Path) -> dict[int, Path]:
    if not ckpt_dir.is_dir():
        return {}
    return {int(m.group(1)): p for p in ckpt_dir.iterdir() if p.is_dir() and (m := CKPT_RE.match(p.name))}


def eval_history(log_history: list[dict[str, Any]]) -> dict[int, tuple[float, float]]:
    """Step → (eval reward accuracy, eval loss) from the trainer's log history."""
    return {int(e["step"]): (float(e[EVAL_ACC]), float(e.get(EVAL_LOSS, float("inf"))))
            for e in log_history if EVAL_ACC in e}


def best_step(history: dict[int, tuple[float, float]], steps: list[int]) -> int | None:
    """Highest eval reward accuracy, ties → lower eval loss, then the earlier step.

    Checkpoints without an evaluation rank last; with no evaluation at all the newest wins.

    >>> best_step({2: (0.5, 0.7), 4: (0.5, 0.6), 6: (0.4, 0.1)}, [2, 4, 6])
    4
    >>> best_step({}, [2, 4])
    4
    """
    if not steps:
        return None
    scored = [s for s in steps if s in history]
    if not scored:
        return max(steps)
    return min(scored, key=lambda s: (-history[s][0], history[s][1], s))


def prune(ckpt_dir: Path, log_history: list[dict[str, Any]], keep_latest: bool) -> int | None:
    """Delete every checkpoint but the best (and the newest while training, for resuming)."""
    found = checkpoints(ckpt_dir)
    best = best_step(eval_history(log_history), sorted(found))
    keep = {best} | ({max(found)} if keep_latest and found else set())
    for step, path in found.items():
        if step not in keep:
            shutil.rmtree(path, ignore_errors=True)
    return best


def keep_best_callback() -> Any:
    from transformers import TrainerCallback

    class KeepBest(TrainerCallback):
        """Prunes right after each save, when the state already holds this step's evaluation."""

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.is_world_process_zero:
                prune(Path(args.output_dir), state.log_history, keep_latest=True)

    return KeepBest()


def mixed_bf16(dcfg: DPOConfig, device: str) -> bool:
    """Train in bf16 mixed precision: on CUDA, or on a CPU with native bf16 when dtype is auto
    (the rule generation uses; on an AVX2-only CPU bf16 would be emulated and slower)."""
    from alignment.generation.models import resolve_dtype

    return resolve_dtype(dcfg.dtype, device)[0] == "bfloat16"


def load_policy(dcfg: DPOConfig, device: str) -> tuple[Any, Any]:
    """Base policy and its tokenizer, via the shared loaders: bf16 weights on GPU (unless set),
    fp32 weights on CPU (bf16 there is autocast over fp32 weights, see `mixed_bf16`)."""
    from transformers import AutoModelForCausalLM

    from alignment.generation.models import load_model, load_tokenizer, resolve_dtype
    from alignment.organism.presets import resolve

    path = resolve(dcfg.model)
    # fp32 weights on CPU (bf16 there is autocast, `mixed_bf16`); elsewhere the config's rule.
    dtype = "float32" if device == "cpu" else resolve_dtype(dcfg.dtype, device)[0]
    # Loaded on CPU: the Trainer (or accelerate, one process per GPU) places it.
    model = load_model(AutoModelForCausalLM, path, dtype, "cpu")
    return model, load_tokenizer(path)


def drop_long_prompts(df: pd.DataFrame, tok: Any, limit: int) -> tuple[pd.DataFrame, int]:
    """TRL 1.x has no prompt-length cap; a prompt that fills max_length leaves no response to learn from."""
    if df.empty:
        return df, 0
    lengths = [len(tok(tok.apply_chat_template(list(p), tokenize=False, add_generation_prompt=True),
                       add_special_tokens=False).input_ids) for p in df["prompt"]]
    keep = [n <= limit for n in lengths]
    return df[keep].reset_index(drop=True), len(keep) - sum(keep)


def trl_args(dcfg: DPOConfig, ckpt_dir: Path, seed: int, device: str, has_valid: bool, quiet: bool) -> Any:
    from trl import DPOConfig as TRLDPOConfig

    strategy = "steps" if dcfg.eval_steps else "epoch"
    bf16 = mixed_bf16(dcfg, device)
    return TRLDPOConfig(
        output_dir=str(ckpt_dir),
        seed=seed,
        data_seed=seed,
        per_device_train_batch_size=dcfg.batch_size,
        per_device_eval_batch_size=dcfg.batch_size,
        gradient_accumulation_steps=dcfg.grad_accum,
        num_train_epochs=dcfg.epochs,
        learning_rate=dcfg.learning_rate,
        beta=dcfg.beta,
        max_length=dcfg.max_length,
        eval_strategy=strategy if has_valid else "no",
        eval_steps=dcfg.eval_steps,
        save_strategy=strategy,
        save_steps=dcfg.eval_steps or 500,
        save_only_model=False,  # optimizer and scheduler state are what make a resume exact
        logging_steps=1,
        report_to="none",
        use_cpu=device == "cpu",
        bf16=bf16,
        fp16=False,
        gradient_checkpointing=dcfg.gradient_checkpointing,
        disable_tqdm=quiet,
        dataloader_num_workers=0,
        # The reference log-probabilities come from the run's RefStore (reference.py), filled once
        # per distinct (prompt, response) for every variant and seed.
        precompute_ref_log_probs=dcfg.shared_reference,
        precompute_ref_batch_size=dcfg.batch_size * 2,
    )


def to_dataset(df: pd.DataFrame) -> Any:
    import datasets

    return datasets.Dataset.from_list(
        [{"prompt": list(map(dict, r.prompt)), "chosen": list(map(dict, r.chosen)), "rejected": list(map(dict, r.rejected))}
         for r in df.itertuples()]
    )


def export_adapter(best: Path, adapter_dir: Path) -> None:
    """Copy the best checkpoint's adapter into place whole (temporary folder + rename)."""
    with atomic_dir(adapter_dir) as tmp:
        for name in ADAPTER_FILES:
            shutil.copy2(best / name, tmp / name)


def train_key(dcfg: DPOConfig, train: pd.DataFrame, valid: pd.DataFrame, seed: int) -> str:
    """What one run computes: the `train` sub-section (evaluation settings are not in it, so
    editing them never throws away a trained adapter), the seed and the pairs."""
    fields = dcfg.subsection("train")
    data = {s: [(str(r.example_id), r.chosen[0]["content"], r.rejected[0]["content"]) for r in df.itertuples()]
            for s, df in (("train", train), ("valid", valid))}
    return config_hash({"fields": fields, "seed": seed, "data": data})


def ref_store(dcfg: DPOConfig, folder: Path, device: str) -> RefStore:
    """The run's reference log-probabilities for this policy, dtype, device and length cap."""
    ident = config_hash({"model": dcfg.model, "dtype": dcfg.dtype, "device": device, "max_length": dcfg.max_length})
    return RefStore(folder / f"ref_logps-{ident}.parquet")


def train_tokens(trainer: Any) -> int:
    """Tokens the policy reads in one epoch: prompt + chosen and prompt + rejected of every pair."""
    ds = trainer.train_dataset
    return sum(2 * len(p) + len(c) + len(r) for p, c, r in zip(ds["prompt_ids"], ds["chosen_ids"], ds["rejected_ids"], strict=True))


def train_one(dcfg: DPOConfig, train: pd.DataFrame, valid: pd.DataFrame, out_dir: Path, seed: int,
              quiet: bool = False, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Train (or resume, or skip when finished) one LoRA DPO run; returns its result record."""
    key = train_key(dcfg, train, valid, seed)
    result_file = out_dir / "result.json"
    if read_key(out_dir) == key and result_file.is_file():
        return {**json.loads(result_file.read_text()), "status": "skipped"}
    if is_main_process():
        keyed_dir(out_dir, key)  # another config's checkpoints must not be resumed
    started = time.time()
    if quiet:
        import datasets

        datasets.disable_progress_bars()
    device = pick_device(dcfg.device)
    model, tok = load_policy(dcfg, device)
    train, n_long_t = drop_long_prompts(train, tok, dcfg.max_prompt_length)
    valid, n_long_v = drop_long_prompts(valid, tok, dcfg.max_prompt_length)
    if train.empty:
        return {"status": "no_pairs", "dropped_long_prompts": n_long_t + n_long_v}
    ckpt_dir = out_dir / "checkpoints"
    resume = complete_checkpoint(ckpt_dir, remove=is_main_process())
    store = ref_store(dcfg, out_dir.parent, device) if dcfg.shared_reference else None
    ref_started = time.time()
    trainer = build_trainer(dcfg, model, tok, train, valid, ckpt_dir, seed, device, quiet, callbacks or [], store)
    ref_seconds = time.time() - ref_started  # the trainer's setup, where the reference pass runs
    train_started = time.time()
    trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    train_seconds = time.time() - train_started
    tokens = round(train_tokens(trainer) * dcfg.epochs)
    history = eval_history(trainer.state.log_history)
    result: dict[str, Any] = {"status": "trained", "resumed_from": resume.name if resume else None}
    if trainer.is_world_process_zero():
        best = prune(ckpt_dir, trainer.state.log_history, keep_latest=False)
        assert best is not None, "training saved no checkpoint"
        export_adapter(ckpt_dir / f"checkpoint-{best}", out_dir / "adapter")
        acc, loss = history.get(best, (float("nan"), float("nan")))
        result |= {"best_step": best, "eval_reward_accuracy": acc, "eval_loss": loss,
                   "steps": trainer.state.global_step, "train_pairs": len(train), "valid_pairs": len(valid),
                   "dropped_long_prompts": n_long_t + n_long_v, "seconds": round(time.time() - started, 2), "device": device,
                   "train_seconds": round(train_seconds, 2), "train_tokens": tokens,
                   "train_tokens_per_second": round(tokens / train_seconds, 1) if train_seconds > 0 else None,
                   "setup_seconds": round(ref_seconds, 2),
                   "ref_computed": store.computed if store else None, "ref_reused": store.reused if store else None}
        write_json(result_file, result)
    return result


def score_completions_only() -> None:
    """Make TRL's fused LM head score only the completion positions on a CPU too.

    TRL 1.16 projects through the LM head, in tiles, just the positions with a label ("compact")
    on CUDA/XPU; elsewhere it scores every position, so that compiled backends (Neuron) keep one
    tile shape. A CPU runs eagerly, so nothing recompiles, and a Math Book prompt is ~80% of each
    sequence: the head over every position was 49% of an organism DPO step (torch profiler,
    2026-12-05). The log-probabilities of the labelled positions are the same; only the masked
    ones, which the loss multiplies by 0, are no longer computed. A TRL without the hook is left
    as it is."""
    import trl.trainer.utils as trl_utils

    test = getattr(trl_utils, "_use_triton", None)
    if test is None or getattr(test, "cpu_compact", False):
        return

    def compact(device: Any) -> bool:
        return device.type == "cpu" or test(device)

    compact.cpu_compact = True  # type: ignore[attr-defined]
    trl_utils._use_triton = compact


def build_trainer(dcfg: DPOConfig, model: Any, tok: Any, train: pd.DataFrame, valid: pd.DataFrame, ckpt_dir: Path,
                  seed: int, device: str, quiet: bool, callbacks: list[Any], store: RefStore | None = None) -> Any:
    from peft import LoraConfig
    from trl import DPOTrainer

    score_completions_only()

    trainer_cls = DPOTrainer if store is None else shared_ref_trainer(store, dcfg.batch_size * 2)
    n_layers = int(model.config.num_hidden_layers)
    top = None if dcfg.lora_layers is None else list(range(max(0, n_layers - dcfg.lora_layers), n_layers))
    lora = LoraConfig(r=dcfg.lora_r, lora_alpha=dcfg.lora_alpha, lora_dropout=dcfg.lora_dropout,
                      target_modules=list(dcfg.target_modules), layers_to_transform=top, task_type="CAUSAL_LM")
    from alignment.runtime.console import quiet_trainer

    return quiet_trainer(trainer_cls(
        model=model,
        args=trl_args(dcfg, ckpt_dir, seed, device, not valid.empty, quiet),
        train_dataset=to_dataset(train),
        eval_dataset=to_dataset(valid) if not valid.empty else None,
        processing_class=tok,
        peft_config=lora,
        callbacks=[keep_best_callback(), *callbacks],
    ), quiet)
