"""LoRA SFT and greedy prediction (alignment/reasonbench/experiments/sft.py) on the tiny random Llama."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from safetensors.torch import load_file
from transformers import TrainerCallback

from alignment.errors import UserError
from alignment.generation.models import resolve_dtype
from alignment.reasonbench.experiments import sft

ALL_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# Eight distinct answers to eight near-identical prompts: only a model that learnt the mapping
# (and decodes with the template it was trained with) returns every one of them.
ANSWERS = ["approve", "deny", "refer", "none", "G", "N A", "approve G", "deny N"]
SHORT = [f"Case {i}: what is the answer for item {i * 7}?" for i in range(8)]
PROMPTS = [p + " more" * i for i, p in enumerate(SHORT)]  # lengths differ: padding matters


def cfg_for(model: Path, **kw) -> sft.SFTConfig:
    base = dict(model=str(model), lora_r=8, lora_alpha=16, batch_size=2, max_steps=7, save_steps=3,
                learning_rate=1e-2, max_new_tokens=16, eval_batch_size=3)
    return sft.SFTConfig(**{**base, **kw})


def adapter_weights(out: Path) -> dict:
    return load_file(out / "adapter" / "adapter_model.safetensors")


def test_completion_only_labels_and_identical_prompt_tokens(tiny_llama_dir, tmp_path):
    cfg = cfg_for(tiny_llama_dir)
    trainer = sft.build_trainer(cfg, str(tiny_llama_dir), PROMPTS[:2], ANSWERS[:2], tmp_path, 0)
    tok = trainer.processing_class
    row = trainer.train_dataset[1]
    prompt = sft.prompt_ids(tok, PROMPTS[1])  # what predict feeds the model
    assert row["input_ids"][: len(prompt)] == prompt
    assert all(x == -100 for x in row["labels"][: len(prompt)])
    learnt = [t for t, x in zip(row["input_ids"], row["labels"], strict=True) if x != -100]
    assert tok.decode(learnt) == "deny<|end|>\n"  # the answer and the template's end of turn


def test_prompt_without_chat_template(tiny_llama_dir, tmp_path):
    plain = tmp_path / "plain"
    shutil.copytree(tiny_llama_dir, plain)
    (plain / "chat_template.jinja").unlink()
    trainer = sft.build_trainer(cfg_for(plain), str(plain), PROMPTS[:2], ANSWERS[:2], tmp_path / "o", 0)
    tok = trainer.processing_class
    assert not sft.has_template(tok)
    row = trainer.train_dataset[0]
    prompt = sft.prompt_ids(tok, PROMPTS[0])
    assert row["input_ids"][: len(prompt)] == prompt and row["labels"][len(prompt)] != -100


def test_train_then_predict_in_input_order(tiny_llama_dir, tmp_path):
    cfg = cfg_for(tiny_llama_dir, learning_rate=1e-4)  # barely moved: long, varied outputs
    stats = sft.train(cfg, PROMPTS, ANSWERS, tmp_path, seed=0)
    # auto: bf16 where the CPU computes it natively, else fp32; the stats say which was used
    assert stats["steps"] == 7 and stats["resumed_from"] is None and stats["dtype"] == resolve_dtype("auto", "cpu")[0]
    assert stats["train_tokens"] > 0 and stats["train_tokens_per_s"] > 0 and stats["dropped"] == 0
    assert (tmp_path / "adapter" / "adapter_model.safetensors").is_file()
    assert not (tmp_path / "checkpoints").exists()  # superseded by the adapter
    order = [5, 0, 7, 2, 6, 1, 3, 4]
    batched, pstats = sft.predict(cfg, tmp_path, [PROMPTS[i] for i in order])
    assert pstats["cases"] == 8 and pstats["cases_per_s"] > 0 and pstats["new_tokens"] > 8
    assert len(set(batched)) >= 3
    # One prompt per batch: no padding at all. Left-padded, length-sorted batches must agree.
    single, _ = sft.predict(replace(cfg, eval_batch_size=1), tmp_path, PROMPTS)
    assert batched == [single[i] for i in order]


def test_overfits_a_small_mapping(tiny_llama_dir, tmp_path):
    cfg = cfg_for(tiny_llama_dir, target_modules=ALL_MODULES, batch_size=8, max_steps=100,
                  lr_scheduler="constant", save_steps=1000)
    barely = replace(cfg, max_steps=2)
    sft.train(barely, SHORT, ANSWERS, tmp_path / "barely", seed=0)
    before, _ = sft.predict(barely, tmp_path / "barely", SHORT)
    assert sum(p == a for p, a in zip(before, ANSWERS, strict=True)) < 4  # the check below is not free
    sft.train(cfg, SHORT, ANSWERS, tmp_path / "fit", seed=0)
    shuffled = [3, 6, 0, 5, 1, 7, 2, 4]
    preds, _ = sft.predict(cfg, tmp_path / "fit", [SHORT[i] for i in shuffled])
    assert preds == [ANSWERS[i] for i in shuffled]


class Kill(TrainerCallback):
    """Stops training like a kill would: after the step-3 checkpoint, before the run finishes."""

    def on_step_end(self, args, state, control, **kw):
        if state.global_step == 5:
            raise KeyboardInterrupt


def test_interrupted_run_resumes_to_the_same_adapter(tiny_llama_dir, tmp_path, monkeypatch):
    cfg = cfg_for(tiny_llama_dir, lora_dropout=0.1)  # dropout: the RNG state must resume too
    straight = sft.train(cfg, PROMPTS, ANSWERS, tmp_path / "straight", seed=0)
    quiet = sft.quiet_trainer
    monkeypatch.setattr(sft, "quiet_trainer", lambda tr: quiet(tr).add_callback(Kill()) or tr)
    with pytest.raises(KeyboardInterrupt):
        sft.train(cfg, PROMPTS, ANSWERS, tmp_path / "killed", seed=0)
    assert not (tmp_path / "killed" / "adapter").exists()  # no half-finished adapter
    assert sft.last_checkpoint(tmp_path / "killed" / "checkpoints").name == "checkpoint-3"
    monkeypatch.setattr(sft, "quiet_trainer", quiet)
    resumed = sft.train(cfg, PROMPTS, ANSWERS, tmp_path / "killed", seed=0)
    assert resumed["resumed_from"].endswith("checkpoint-3") and resumed["steps"] == 7
    assert resumed["train_tokens"] == straight["train_tokens"]
    a, b = adapter_weights(tmp_path / "straight"), adapter_weights(tmp_path / "killed")
    assert a.keys() == b.keys() and all((a[k] - b[k]).abs().max() < 1e-6 for k in a)
    other = sft.train(cfg, PROMPTS, ANSWERS, tmp_path / "seed1", seed=1)
    c = adapter_weights(tmp_path / "seed1")
    assert other["steps"] == 7 and any((a[k] - c[k]).abs().max() > 1e-4 for k in a)


def test_damaged_newest_checkpoint_is_skipped(tmp_path):
    for step, state in ((3, "{}"), (6, "{trunc")):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    (tmp_path / "checkpoint-9").mkdir()  # killed before its state was written
    assert sft.last_checkpoint(tmp_path).name == "checkpoint-3"
    assert sft.last_checkpoint(tmp_path / "none") is None


def test_finished_adapter_is_reused_and_a_new_recipe_retrains(tiny_llama_dir, tmp_path, monkeypatch):
    cfg = cfg_for(tiny_llama_dir, max_steps=2)
    first = sft.train(cfg, PROMPTS, ANSWERS, tmp_path, seed=0)
    build = sft.build_trainer

    def refuse(*a, **kw):
        raise AssertionError("trained again")

    monkeypatch.setattr(sft, "build_trainer", refuse)
    assert sft.train(replace(cfg, eval_batch_size=5, max_new_tokens=3), PROMPTS, ANSWERS, tmp_path, seed=0) == first
    with pytest.raises(AssertionError, match="trained again"):
        sft.train(replace(cfg, learning_rate=5e-3), PROMPTS, ANSWERS, tmp_path, seed=0)
    with pytest.raises(AssertionError, match="trained again"):
        sft.train(cfg, PROMPTS, ANSWERS[::-1], tmp_path, seed=0)
    monkeypatch.setattr(sft, "build_trainer", build)
    again = sft.train(replace(cfg, max_steps=3), PROMPTS, ANSWERS, tmp_path, seed=0)
    assert again["steps"] == 3
    assert json.loads((tmp_path / "adapter" / "sft.json").read_text())["stats"] == again


@pytest.mark.parametrize(("field", "value"), [
    ("lora_r", 0), ("lora_dropout", 1.0), ("target_modules", ()), ("learning_rate", 0.0), ("epochs", 0),
    ("max_steps", 0), ("batch_size", 0), ("max_length", 4), ("dtype", "fp32"), ("save_steps", 0),
    ("device", "gpu"), ("lr_scheduler", "step"), ("lora_layers", -1), ("model", ""),
])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(UserError, match=f"^{field}"):
        sft.SFTConfig(**{field: value})


def test_target_modules_from_yaml_list():
    assert sft.SFTConfig(target_modules=["q_proj"]).target_modules == ("q_proj",)


def test_bad_inputs_are_user_errors(tiny_llama_dir, tmp_path):
    cfg = cfg_for(tiny_llama_dir)
    with pytest.raises(UserError, match="2 prompts but 1 completions"):
        sft.train(cfg, PROMPTS[:2], ANSWERS[:1], tmp_path, seed=0)
    with pytest.raises(UserError, match="no training cases"):
        sft.train(cfg, [], [], tmp_path, seed=0)
    with pytest.raises(UserError, match="case 1"):
        sft.train(cfg, PROMPTS[:2], ["deny", ""], tmp_path, seed=0)
    with pytest.raises(UserError, match="no finished adapter"):
        sft.predict(cfg, tmp_path, PROMPTS)
    with pytest.raises(UserError, match="cannot load"):
        sft.train(cfg_for(tmp_path / "missing-model"), PROMPTS, ANSWERS, tmp_path / "o", seed=0)
