"""`reward.backend: judge`: a chat LM asked a yes/no rubric; reward = log P(yes) − log P(no).

Used by `alignment score CONFIG`. configs/embedded_smollm2.yaml uses it with SmolLM2-135M as a
stand-in for a trained reward model: good for exercising the pipeline, not for conclusions.
Rubric: prompts/reward_judge.txt.
With `reward.shared_prefix` (default) the rubric's start and the question run once per prompt and
responses are packed (see alignment/reward/base.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alignment.generation.base import Chat
from alignment.generation.models import load_model, load_tokenizer, model_path, pick_device
from alignment.reward.base import (
    REWARD_MODELS,
    RewardConfig,
    SharedSplit,
    last_position_batches,
    score_texts,
    shared_prefix_scores,
    user_turn,
)
from alignment.tasks.base import load_prompt, render


def answer_token_ids(tokenizer: Any, words: list[str]) -> list[int]:
    """First token of each spelling (with and without a leading space), deduplicated."""
    ids = set()
    for w in words:
        for variant in (w, " " + w):
            toks = tokenizer(variant, add_special_tokens=False).input_ids
            if toks:
                ids.add(toks[0])
    return sorted(ids)


class JudgeRM:
    """Holds a causal LM used as a yes/no grader."""

    def __init__(self, cfg: RewardConfig, model: Any = None, tokenizer: Any = None) -> None:
        from transformers import AutoModelForCausalLM

        self.cfg = cfg
        path = model_path(cfg.model)
        self.tokenizer = tokenizer or load_tokenizer(path, cfg.trust_remote_code)
        self.model = model or load_model(AutoModelForCausalLM, path, cfg.dtype, cfg.device, cfg.trust_remote_code)
        self.rubric = load_prompt("reward_judge")
        self.yes = torch.tensor(answer_token_ids(self.tokenizer, ["Yes", "yes"]))
        self.no = torch.tensor(answer_token_ids(self.tokenizer, ["No", "no"]))
        self.autocast = cfg.autocast_bf16 and pick_device(cfg.device) == "cpu"

    def texts(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> list[str]:
        question = user_turn(prompt)
        return [
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": render(self.rubric, {"question": question, "response": r + s})}],
                tokenize=False,
                add_generation_prompt=True,
            )
            for r in responses
            for s in suffixes
        ]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        logits = self.model(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1).logits[:, -1, :]
        return self._margin(logits)

    def _margin(self, logits: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(logits.float(), dim=-1)
        return torch.logsumexp(logp[:, self.yes], -1) - torch.logsumexp(logp[:, self.no], -1)

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        logits = self.model.get_output_embeddings()(hidden)
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:  # Gemma-2 style models squash logits in their own forward; match it
            logits = torch.tanh(logits / cap) * cap
        return self._margin(logits)

    def _naive(self, texts: list[str]) -> np.ndarray:
        return last_position_batches(
            texts, self.tokenizer, self._forward, self.cfg.batch_size, self.cfg.max_length, self.model.device, self.autocast
        )

    def _shared(self, split: SharedSplit) -> np.ndarray:
        body = self.model.base_model
        return shared_prefix_scores(split, body, self._head, self.cfg.batch_size, self.tokenizer.pad_token_id, self.autocast)

    def score(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> np.ndarray:
        texts = self.texts(prompt, responses, suffixes)
        return score_texts(texts, len(responses), self.cfg, self.tokenizer, self._naive, self._shared)


@REWARD_MODELS.register("judge")
def _make(cfg: RewardConfig) -> JudgeRM:
    return JudgeRM(cfg)
