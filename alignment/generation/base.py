"""The `Generator` interface, its config and per-sample seeds (`alignment generate CONFIG`).

A generator takes chats (message lists) and returns `n` samples per chat. Each sample has its
own seed, so a sample does not depend on which other prompts shared its batch, and the same seed
gives the same text. Backends: `transformers` (CPU or GPU) and `vllm` (GPU, imported on use).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from alignment.config import check, check_device, doc
from alignment.errors import UserError
from alignment.registry import Registry

Chat = list[dict[str, str]]
# Declared before the config so it can check names; `alignment.generation` registers the backends.
GENERATORS: Registry = Registry("generation backend")


@dataclass
class GenerationConfig:
    """How responses are sampled."""

    backend: str = doc("A registered generation backend: transformers (CPU/GPU) or vllm (GPU only, optional extra).", "transformers")
    model: str = doc("Preset name (smollm2-135m, llama-3.1-8b-instruct, ...), hub id or local folder.", "smollm2-135m")
    n_samples: int = doc("Samples per prompt, for the original and for the counterfactual prompt.", 4)
    temperature: float = doc("Sampling temperature; 0 means greedy.", 0.8)
    top_p: float = doc("Nucleus sampling mass, in (0, 1].", 0.95)
    max_new_tokens: int = doc("Maximum new tokens per response.", 256)
    greedy: bool = doc("Also decode one greedy response per prompt (stored with sample = -1).", False)
    batch_size: int = doc("Sequences per forward pass (transformers backend).", 16)
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = doc("Weights dtype; auto = bf16 on CUDA or a CPU with native bf16 (avx512_bf16/amx_bf16), else fp32.", "auto")
    device: str = doc("auto, cpu, cuda or cuda:N (transformers backend).", "auto")
    seed: int = doc("Base seed; each sample's seed derives from it, the example id, variant and index.", 0)
    trust_remote_code: bool = doc("Allow model repositories to run their own code (off by default).", False)
    tensor_parallel_size: int = doc("vLLM: GPUs per model replica.", 1)
    gpu_memory_utilization: float = doc("vLLM: share of GPU memory to use.", 0.9)
    enable_prefix_caching: bool = doc("vLLM: reuse KV cache across requests sharing a prompt prefix.", True)
    max_model_len: int | None = doc("vLLM: context length cap (None = the model's).", None)
    splits: list[str] | None = doc("Built splits to sample (null = every built split); a split left out can hold "
                                   "held-out prompts, e.g. the DPO evaluation's (dpo.eval_split).", None)

    def __post_init__(self) -> None:
        check(self.n_samples >= 1 or (self.greedy and self.n_samples == 0), "n_samples",
              f"must be >= 1 (0 only with greedy: true), got {self.n_samples}")
        check(self.temperature >= 0, "temperature", f"must be >= 0, got {self.temperature}")
        check(0 < self.top_p <= 1, "top_p", f"must be in (0, 1], got {self.top_p}")
        check(self.max_new_tokens >= 1, "max_new_tokens", f"must be >= 1, got {self.max_new_tokens}")
        check(self.batch_size >= 1, "batch_size", f"must be >= 1, got {self.batch_size}")
        check(self.tensor_parallel_size >= 1, "tensor_parallel_size", "must be >= 1")
        check(0 < self.gpu_memory_utilization <= 1, "gpu_memory_utilization", "must be in (0, 1]")
        GENERATORS.check(self.backend, "backend")
        check_device(self.device)
        check(self.max_model_len is None or self.max_model_len >= 1, "max_model_len", "must be >= 1 or null")
        check(self.splits is None or (bool(self.splits) and len(set(self.splits)) == len(self.splits)), "splits",
              "must be null or a non-empty list without repeats")


def select_splits(examples: Any, splits: list[str] | None) -> Any:
    """The built examples that `generation.splits` asks to sample (all of them when it is null).

    A named split with no built example is a config error, not an empty run.
    """
    if splits is None:
        return examples
    missing = sorted(set(splits) - set(examples["split"]))
    if missing:
        raise UserError(f"generation.splits: no built examples in {missing}; built splits: {sorted(set(examples['split']))}")
    return examples[examples["split"].isin(splits)].reset_index(drop=True)


class Generator(Protocol):
    """Returns, for each chat, one text per seed (`len(seeds[i])` samples for chat i).

    A seed of None asks for that row's greedy answer; `greedy=True` makes every row greedy. A
    prompt's samples and its greedy answer can so share one call (and one prefill).
    """

    def generate(self, chats: list[Chat], seeds: list[list[int | None]], greedy: bool = False) -> list[list[str]]: ...


def sample_seed(base: int, *parts: object) -> int:
    """A 63-bit seed from the base seed and identifying parts, stable across runs and machines.

    >>> sample_seed(0, "ex-1", "orig", 3) == sample_seed(0, "ex-1", "orig", 3)
    True
    >>> sample_seed(0, "ex-1", "orig", 3) != sample_seed(1, "ex-1", "orig", 3)
    True
    """
    blob = "/".join(map(str, (base, *parts))).encode()
    return int(hashlib.sha256(blob).hexdigest()[:15], 16)


def chat_for(system: str, user: str) -> Chat:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]




def make_generator(cfg: GenerationConfig) -> Generator:
    return GENERATORS.get(cfg.backend)(cfg)

