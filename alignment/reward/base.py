"""Reward-model interface, config and the batching both backends share (`alignment score CONFIG`).

`RewardModel.score(prompt, responses, suffixes)` returns a (len(responses), len(suffixes)) array:
every response scored with every suffix appended (the plain response is suffix ""). Scoring a
prompt's responses together is what lets the prefix be shared later.

Batching rule that keeps scores independent of batch size and order: sequences are sorted by
length, left-padded, given explicit position ids (so padding never shifts positions), and read
at the last position, which with left padding is always the last real token.

Shared-prefix path (`shared_prefix: true`, the default): a prompt's sequences are tokenized in
full, the longest common token prefix runs once, and each response becomes one packed row
[shared response tokens | tail for suffix 1 | tail for suffix 2 ...] scored over the prefix's
KV cache with a 4D mask that keeps each tail blind to the other tails. Slicing full
tokenizations (instead of tokenizing pieces) means the tokens are exactly the naive path's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import torch

import alignment.runtime.threads as threads
from alignment.config import check, check_device, doc
from alignment.generation.base import Chat
from alignment.registry import Registry

# Declared before the config so it can check names; `alignment.reward` registers the backends.
REWARD_MODELS: Registry = Registry("reward backend")


@dataclass
class RewardConfig:
    """Which reward model scores responses, and how."""

    backend: str = doc(
        "A registered reward backend. classifier: a sequence classifier with one logit (Skywork RMs); judge: a chat LM asked "
        "a yes/no rubric, reward = log P(yes) - log P(no).",
        "judge",
    )
    model: str = doc("Preset (skywork-reward-llama-3.1-8b-v0.2, ...), hub id or local folder.", "smollm2-135m")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = doc("Weights dtype; auto = bf16 on CUDA or a CPU with native bf16 (avx512_bf16/amx_bf16), else fp32.", "auto")
    autocast_bf16: bool = doc("CPU only: run fp32 weights under bf16 autocast (faster, approximate).", False)
    device: str = doc("auto, cpu, cuda or cuda:N.", "auto")
    batch_size: int = doc("Sequences per forward pass.", 8)
    max_length: int = doc("Longest scored sequence in tokens; longer ones lose their start.", 4096)
    trust_remote_code: bool = doc("Allow model repositories to run their own code.", False)
    shared_prefix: bool = doc(
        "Run each prompt's common prefix once and pack every response's plain and suffixed tails "
        "into one forward (exact; false = score every full sequence separately).",
        True,
    )
    engine: Literal["transformers", "vllm"] = doc(
        "classifier backend only: transformers, or vllm (GPU; pooling runner with prefix caching).",
        "transformers",
    )
    gpu_memory_utilization: float = doc("vLLM engine: share of GPU memory to use.", 0.9)

    def __post_init__(self) -> None:
        check(self.batch_size >= 1, "batch_size", f"must be >= 1, got {self.batch_size}")
        check(self.max_length >= 16, "max_length", f"must be >= 16, got {self.max_length}")
        REWARD_MODELS.check(self.backend, "backend")
        check(self.engine == "transformers" or self.backend == "classifier", "engine", "vllm needs backend: classifier")
        check_device(self.device)
        check(0 < self.gpu_memory_utilization <= 1, "gpu_memory_utilization", "must be in (0, 1]")


class RewardModel(Protocol):
    def score(self, prompt: Chat, responses: list[str], suffixes: list[str]) -> np.ndarray: ...




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


def common_prefix_len(seqs: list[list[int]]) -> int:
    """Length of the longest token prefix all sequences share."""
    first, n = seqs[0], min(len(x) for x in seqs)
    for j in range(n):
        if any(x[j] != first[j] for x in seqs):
            return j
    return n


@dataclass
class SharedSplit:
    """A prompt's sequences as one prefix plus, per response, its shared part and one tail per suffix."""

    prefix: list[int]
    rows: list[tuple[list[int], list[list[int]]]]


def split_shared(seqs: list[list[list[int]]]) -> SharedSplit | None:
    """`seqs[r][s]` are full token sequences; None when nothing is shared."""
    flat = [x for per in seqs for x in per]
    # Every tail keeps at least one token: its last position is where the score is read.
    p = min(common_prefix_len(flat), min(len(x) for x in flat) - 1)
    if p < 1:
        return None
    rows = []
    for per in seqs:
        tails = [x[p:] for x in per]
        q = min(common_prefix_len(tails), min(len(t) for t in tails) - 1)
        rows.append((tails[0][:q], [t[q:] for t in tails]))
    return SharedSplit(flat[0][:p], rows)


def pack_rows(
    rows: list[tuple[list[int], list[list[int]]]], p: int, pad_id: int, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """ids, additive 4D mask over [prefix | row], position ids and the (row, column) of every tail end.

    Segment 0 is the response part all tails share; segment s+1 is tail s; -1 is padding. A token
    sees the prefix, earlier tokens of segment 0 and earlier tokens of its own segment.
    """
    width = max(len(shared) + sum(map(len, tails)) for shared, tails in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    seg = torch.full((len(rows), width), -1, dtype=torch.long)
    pos = torch.full((len(rows), width), p, dtype=torch.long)
    ends = []
    for b, (shared, tails) in enumerate(rows):
        col, q = len(shared), len(shared)
        ids[b, :q] = torch.tensor(shared, dtype=torch.long)
        seg[b, :q] = 0
        pos[b, :q] = torch.arange(p, p + q)
        for s, tail in enumerate(tails):
            ids[b, col : col + len(tail)] = torch.tensor(tail, dtype=torch.long)
            seg[b, col : col + len(tail)] = s + 1
            # Every tail continues right after the shared part, as it would on its own.
            pos[b, col : col + len(tail)] = torch.arange(p + q, p + q + len(tail))
            col += len(tail)
            ends.append((b, col - 1))
    idx = torch.arange(width)
    causal = idx[None, :, None] >= idx[None, None, :]
    allow = causal & ((seg[:, :, None] == seg[:, None, :]) | (seg[:, None, :] == 0))
    allow = torch.cat([torch.ones(len(rows), width, p, dtype=torch.bool), allow], dim=-1)
    mask = torch.zeros(allow.shape, dtype=dtype).masked_fill(~allow, torch.finfo(dtype).min)
    return ids, mask[:, None], pos, torch.tensor(ends)


@torch.inference_mode()
def shared_prefix_scores(
    split: SharedSplit,
    body: Any,
    head: Callable[[torch.Tensor], torch.Tensor],
    batch_size: int,
    pad_id: int,
    autocast: bool = False,
) -> np.ndarray:
    """Scores (responses, suffixes) from `head(hidden at each tail end)` over the prefix's cache.

    `body` is the transformer without its head (`model.base_model`); `batch_size` counts tails,
    so a forward holds batch_size // suffixes packed rows.
    """
    dev, dtype = body.device, body.dtype
    k = len(split.rows[0][1])
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        prefix_cache = body(input_ids=torch.tensor([split.prefix], device=dev), use_cache=True).cache
    width = [len(s) + sum(map(len, t)) for s, t in split.rows]
    order = sorted(range(len(split.rows)), key=lambda i: (width[i], i))
    per = max(1, batch_size // k)
    out = np.zeros((len(split.rows), k), dtype=np.float64)
    for start in range(0, len(order), per):
        idx = order[start : start + per]
        ids, mask, pos, ends = pack_rows([split.rows[i] for i in idx], len(split.prefix), pad_id, dtype)
        # The forward appends to the cache it is given, so each batch gets its own expanded copy.
        cache = copy.deepcopy(prefix_cache)
        cache.batch_repeat_interleave(len(idx))
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            hidden = body(
                input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev), cache=cache, use_cache=True
            ).last_hidden_state
            vals = head(hidden[ends[:, 0].to(dev), ends[:, 1].to(dev)])
        out[idx] = vals.float().cpu().numpy().reshape(len(idx), k)
    return out


def token_lists(texts: list[str], tokenizer: Any) -> list[list[int]]:
    return [tokenizer(t, add_special_tokens=False).input_ids for t in texts]


def score_texts(
    texts: list[str],
    n_responses: int,
    cfg: RewardConfig,
    tokenizer: Any,
    naive: Callable[[list[str]], np.ndarray],
    shared: Callable[[SharedSplit], np.ndarray] | None,
) -> np.ndarray:
    """The shared-prefix path when enabled and applicable, else `naive(texts)`; (responses, suffixes)."""
    threads.tick()
    k = len(texts) // n_responses
    if cfg.shared_prefix and shared is not None and n_responses:
        seqs = token_lists(texts, tokenizer)
        # Truncated sequences lose their start, so they share nothing: keep the naive path.
        if max(map(len, seqs)) <= cfg.max_length:
            split = split_shared([seqs[r * k : (r + 1) * k] for r in range(n_responses)])
            if split is not None:
                return shared(split)
    return naive(texts).reshape(n_responses, k)
