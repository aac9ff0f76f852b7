"""A checkpoint counts only when complete: a save cut short by a full disk is skipped (and
removed) on resume, which then ends with the weights and result of an uninterrupted run."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pandas as pd
import pytest
from safetensors.torch import load_file
from transformers.trainer_callback import TrainerState

from alignment.dpo import DPOConfig
from alignment.dpo.train import checkpoints, train_one
from alignment.runtime.checkpoints import complete_checkpoint


def toy_pairs(n: int) -> pd.DataFrame:
    rows = []
    for i in range(n):
        prompt = [{"role": "user", "content": f"What is {i} plus {i}? Options: (A) {2 * i} (B) {2 * i + 1}"}]
        rows.append({"example_id": f"e{i}", "prompt": prompt,
                     "chosen": [{"role": "assistant", "content": f"The answer is (A) {2 * i}."}],
                     "rejected": [{"role": "assistant", "content": "According to the book, (B)."}]})
    return pd.DataFrame(rows)


def full_disk_while_saving(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trainer state of checkpoint-`step` (the file the Trainer writes last) is cut short by
    a full disk: half its text is written, then ENOSPC."""
    real = TrainerState.save_to_json

    def save(self: TrainerState, json_path: str) -> None:
        if Path(json_path).parent.name != f"checkpoint-{step}":
            return real(self, json_path)
        Path(json_path).write_text(json.dumps({"global_step": step})[:9])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(TrainerState, "save_to_json", save)


def test_half_written_checkpoint_is_skipped_and_resume_equals_a_straight_run(
        tiny_llama_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = DPOConfig(model=str(tiny_llama_dir), device="cpu", seeds=[0], epochs=2, batch_size=2, eval_steps=2,
                    learning_rate=5e-3, lora_r=4, lora_alpha=8, lora_dropout=0.0, max_length=96, max_prompt_length=64)
    pairs = toy_pairs(8)
    train, valid = pairs.iloc[:6], pairs.iloc[6:]
    straight = train_one(cfg, train, valid, tmp_path / "straight", seed=0, quiet=True)

    out = tmp_path / "cut"
    with monkeypatch.context() as m:
        full_disk_while_saving(4, m)
        with pytest.raises(OSError, match="No space left"):
            train_one(cfg, train, valid, out, seed=0, quiet=True)
    assert sorted(checkpoints(out / "checkpoints")) == [2, 4]  # 4 looks newest, but is not whole

    said: list[str] = []
    monkeypatch.setattr("alignment.runtime.console.detail", said.append)
    resumed = train_one(cfg, train, valid, out, seed=0, quiet=True)
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["steps"] == straight["steps"] == 6
    assert any("checkpoint-4 is incomplete" in line for line in said)
    for field in ("best_step", "eval_reward_accuracy", "eval_loss"):
        assert resumed[field] == pytest.approx(straight[field], abs=1e-6), field
    a = load_file(tmp_path / "straight" / "adapter" / "adapter_model.safetensors")
    b = load_file(out / "adapter" / "adapter_model.safetensors")
    assert a.keys() == b.keys() and all(float((a[k] - b[k]).abs().max()) < 1e-6 for k in a)


def test_only_complete_checkpoints_count_and_others_are_removed(tmp_path: Path) -> None:
    for step, state in ((3, '{"global_step": 3}'), (6, '{"global_st'), (9, None), (12, "")):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "adapter_model.safetensors").write_bytes(b"\0" * 8)
        if state is not None:
            (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text(state)
    (tmp_path / "notes").mkdir()
    said: list[str] = []
    kept = complete_checkpoint(tmp_path, remove=False, log=said.append)
    assert kept is not None and kept.name == "checkpoint-3" and not said  # another rank: nothing removed
    assert complete_checkpoint(tmp_path, log=said.append) == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-3", "notes"]
    assert len(said) == 3 and all("incomplete" in line for line in said)
    assert complete_checkpoint(tmp_path / "absent") is None
