"""`reward.backend: classifier`: any sequence classifier with one logit (Skywork reward models).

Used by `alignment score CONFIG`. Input is the RM's own chat template over [user: system +
query, assistant: response + suffix]; the score is the logit at the last real token. We read the
head at the last position ourselves instead of trusting the model's pooling, because with
pad = eos tokenizers that pooling can land on the wrong token.

With `reward.shared_prefix` (default) the prompt prefix runs once per prompt and responses are
packed (see alignment/reward/base.py); `reward.engine: vllm` scores with vLLM's pooling runner
instead (GPU, prefix caching; vLLM is imported only then).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alignment.errors import UserError
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


class ClassifierRM:
    """Holds an `AutoModelForSequenceClassification` and its tokenizer."""

    def __init__(self, cfg: RewardConfig, model: Any = None, tokenizer: Any = None) -> None:
        from transformers import AutoModelForSequenceClassification

        self.cfg = cfg
        path = model_path(cfg.model)
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

    def _naive(self, texts: list[str]) -> np.ndarray:
        return last_position_batches(
            texts, self.tokenizer, self._forward, self.cfg.batch_size, self.cfg.max_length, self.model.device, self.autocast
        )

    def _shared(self, split: SharedSplit) -> np.ndarray:
        head = self.head
        assert head is not None
        return shared_prefix_scores(
            split, self.model.base_model, lambda h: head(h)[:, 0], self.cfg.batch_size, self.tokenizer.pad_token_id, self.autocast
        )

    def score(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> np.ndarray:
        texts = self.texts(prompt, responses, suffixes)
        shared = self._shared if self.head is not None else None
        return score_texts(texts, len(responses), self.cfg, self.tokenizer, self._naive, shared)


class VLLMClassifierRM(ClassifierRM):
    """The same texts scored by vLLM's pooling runner (last-token classify, raw logit, prefix caching)."""

    def __init__(self, cfg: RewardConfig) -> None:
        # No super().__init__(): it would load a second copy of the model through transformers.
        try:
            import vllm
        except ImportError:
            raise UserError("reward.engine: vllm needs vLLM in its own environment on a GPU machine "
                            "(recipe: docs/cluster.md)") from None
        self.cfg = cfg
        self._vllm = vllm
        self.llm = vllm.LLM(
            model=model_path(cfg.model),
            runner="pooling",
            enable_prefix_caching=True,
            dtype="auto" if cfg.dtype == "auto" else cfg.dtype,
            max_model_len=cfg.max_length,
            gpu_memory_utilization=cfg.gpu_memory_utilization,
            trust_remote_code=cfg.trust_remote_code,
        )
        self.tokenizer = self.llm.get_tokenizer()

    def raw_logit_params(self) -> Any:
        """Pooling params for the raw logit (the transformers path's score), not its sigmoid."""
        try:
            return self._vllm.PoolingParams(use_activation=False)
        except TypeError:  # vLLM < 0.11 spells it `activation`
            return self._vllm.PoolingParams(activation=False)

    def score(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> np.ndarray:
        texts = self.texts(prompt, responses, suffixes)
        # Token ids, not text: vLLM would otherwise add a BOS the chat template already wrote.
        prompts = [{"prompt_token_ids": self.tokenizer(t, add_special_tokens=False).input_ids[-self.cfg.max_length :]} for t in texts]
        params = self.raw_logit_params()
        outs = self.llm.classify(prompts, pooling_params=params, use_tqdm=False)
        flat = np.array([float(o.outputs.probs[0]) for o in outs], dtype=np.float64)
        return flat.reshape(len(responses), len(suffixes))


@REWARD_MODELS.register("classifier")
def _make(cfg: RewardConfig) -> ClassifierRM:
    return VLLMClassifierRM(cfg) if cfg.engine == "vllm" else ClassifierRM(cfg)
