"""Reward-model interface, config and the batching both backends share (`alignment score CONFIG`).

`RewardModel.score(prompt, responses, suffixes)` returns a (len(responses), len(suffixes)) array:
every response scored with every suffix appended (the plain response is suffix ""). Scoring a
prompt's responses together is what lets the prefix be shared later.

Batching rule that keeps scores independent of batch size and order: sequences are sorted by
length, left-padded, given explicit position ids (so padding never shifts positions), and read
at the last position, which with left padding is always the last real token.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import torch

from alignment.config import check, doc
from alignment.generation.base import Chat
from alignment.registry import Registry


@dataclass
class RewardConfig:
    """Which reward model scores responses, and how."""

    backend: Literal["classifier", "judge"] = doc(
        "classifier: a sequence classifier with one logit (Skywork RMs); judge: a chat LM asked "
        "a yes/no rubric, reward = log P(yes) - log P(no).",
        "judge",
    )
    model: str = doc("Preset (skywork-reward-llama-3.1-8b-v0.2, ...), hub id or local folder.", "smollm2-135m")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = doc("Weights dtype; auto = bf16 on GPU, fp32 on CPU.", "auto")
    autocast_bf16: bool = doc("CPU only: run fp32 weights under bf16 autocast (faster, approximate).", False)
    device: str = doc("auto, cpu, cuda or cuda:N.", "auto")
    batch_size: int = doc("Sequences per forward pass.", 8)
    max_length: int = doc("Longest scored sequence in tokens; longer ones lose their start.", 4096)
    trust_remote_code: bool = doc("Allow model repositories to run their own code.", False)

    def __post_init__(self) -> None:
        check(self.batch_size >= 1, "batch_size", f"must be >= 1, got {self.batch_size}")
        check(self.max_length >= 16, "max_length", f"must be >= 16, got {self.max_length}")


class RewardModel(Protocol):
    def score(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> np.ndarray: ...


REWARD_MODELS: Registry[Callable[[RewardConfig], RewardModel]] = Registry("reward backend")


def make_reward_model(cfg: RewardConfig) -> RewardModel:
    return REWARD_MODELS.get(cfg.backend)(cfg)


def user_turn(prompt: Chat) -> str:
    """The policy's system and user messages folded into one user turn for the RM."""
    return "\n\n".join(m["content"] for m in prompt if m["role"] in ("system", "user") and m["content"])


@torch.inference_mode()
def last_position_batches(
    texts: list[str],
    tokenizer: Any,
    forward: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor],
    batch_size: int,
    max_length: int,
    device: Any,
    autocast: bool = False,
) -> np.ndarray:
    """Run `forward(ids, mask, positions) -> (batch,)` over texts sorted by length; original order."""
    tokenizer.padding_side = "left"
    tokenizer.truncation_side = "left"
    lengths = [len(tokenizer(t, add_special_tokens=False).input_ids) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: (lengths[i], i))
    out = np.zeros(len(texts), dtype=np.float64)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        enc = tokenizer(
            [texts[i] for i in idx],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
            add_special_tokens=False,
        ).to(device)
        pos = (enc.attention_mask.cumsum(-1) - 1).clamp(min=0)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            vals = forward(enc.input_ids, enc.attention_mask, pos)
        out[idx] = vals.float().cpu().numpy()
    return out
