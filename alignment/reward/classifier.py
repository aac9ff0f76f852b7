"""`reward.backend: classifier`: any sequence classifier with one logit (Skywork reward models).

Used by `alignment score CONFIG`. Input is the RM's own chat template over [user: system +
query, assistant: response + suffix]; the score is the logit at the last real token. We read the
head at the last position ourselves instead of trusting the model's pooling, because with
pad = eos tokenizers that pooling can land on the wrong token.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alignment.errors import UserError
from alignment.generation.base import Chat
from alignment.generation.models import load_model, load_tokenizer, pick_device, resolve
from alignment.reward.base import REWARD_MODELS, RewardConfig, last_position_batches, user_turn


class ClassifierRM:
    """Holds an `AutoModelForSequenceClassification` and its tokenizer."""

    def __init__(self, cfg: RewardConfig, model: Any = None, tokenizer: Any = None) -> None:
        from transformers import AutoModelForSequenceClassification

        self.cfg = cfg
        path = resolve(cfg.model)
        self.tokenizer = tokenizer or load_tokenizer(path, cfg.trust_remote_code)
        self.model = model or load_model(
            AutoModelForSequenceClassification, path, cfg.dtype, cfg.device, cfg.trust_remote_code
        )
        if self.model.config.num_labels != 1:
            raise UserError(f"reward.model {cfg.model!r}: expected a classifier with one logit, found {self.model.config.num_labels}")
        self.head = getattr(self.model, "score", None) or getattr(self.model, "classifier", None)
        self.autocast = cfg.autocast_bf16 and pick_device(cfg.device) == "cpu"

    def texts(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> list[str]:
        user = user_turn(prompt)
        return [
            self.tokenizer.apply_chat_template(
                [{"role": "user", "content": user}, {"role": "assistant", "content": r + s}],
                tokenize=False,
            )
            for r in responses
            for s in suffixes
        ]

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        if self.head is None:  # unusual architecture: fall back to the model's own pooling
            return self.model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, 0]
        hidden = self.model.base_model(input_ids=ids, attention_mask=mask, position_ids=pos).last_hidden_state
        return self.head(hidden[:, -1, :])[:, 0]

    def score(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> np.ndarray:
        flat = last_position_batches(
            self.texts(prompt, responses, suffixes),
            self.tokenizer,
            self._forward,
            self.cfg.batch_size,
            self.cfg.max_length,
            self.model.device,
            self.autocast,
        )
        return flat.reshape(len(responses), len(suffixes))


@REWARD_MODELS.register("classifier")
def _make(cfg: RewardConfig) -> ClassifierRM:
    return ClassifierRM(cfg)
