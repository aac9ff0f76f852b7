"""vLLM generation backend (GPU; `pip install -e '.[vllm]'` in its own environment).

Selected by `generation.backend: vllm`. vLLM is imported only here, only when chosen. Each
sample is its own request with its own seed; automatic prefix caching shares the prompt's KV
cache across a prompt's N requests.
"""

from __future__ import annotations

from typing import Any

from alignment.errors import UserError
from alignment.generation.base import GENERATORS, Chat, GenerationConfig
from alignment.generation.models import model_path


class VLLMGenerator:
    """Holds a `vllm.LLM` engine."""

    def __init__(self, cfg: GenerationConfig) -> None:
        try:
            import vllm
        except ImportError:
            raise UserError(
                "generation.backend: vllm needs vLLM in its own environment on a GPU machine (the vllm "
                "extra cannot share one with this package; recipe: docs/cluster.md)"
            ) from None
        self.cfg = cfg
        self._vllm = vllm
        kwargs: dict[str, Any] = {
            "model": model_path(cfg.model),
            "tensor_parallel_size": cfg.tensor_parallel_size,
            "gpu_memory_utilization": cfg.gpu_memory_utilization,
            "enable_prefix_caching": cfg.enable_prefix_caching,
            "trust_remote_code": cfg.trust_remote_code,
            "seed": cfg.seed,
            "dtype": "auto" if cfg.dtype == "auto" else cfg.dtype,
        }
        if cfg.max_model_len:
            kwargs["max_model_len"] = cfg.max_model_len
        self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()

    @property
    def model_id(self) -> str:
        return self.cfg.model

    @property
    def runtime(self) -> dict[str, str]:
        """As `TransformersGenerator.runtime`: the dtype vLLM loaded and why, and the decoder."""
        # The resolved dtype sits on the engine's model config; fall back to the requested one
        # where a vLLM version keeps it elsewhere (not exercised without a GPU).
        config = getattr(getattr(self.llm, "llm_engine", None), "model_config", None)
        dtype = str(getattr(config, "dtype", self.cfg.dtype)).removeprefix("torch.")
        why = "auto: vLLM picks from the checkpoint" if self.cfg.dtype == "auto" else "set in the config"
        return {"dtype": dtype, "dtype_reason": why, "decoder": "vllm"}

    def generate(self, chats: list[Chat], seeds: list[list[int | None]], greedy: bool = False) -> list[list[str]]:
        cfg = self.cfg
        greedy = greedy or cfg.temperature == 0
        prompts, params, owner = [], [], []
        for i, (chat, ss) in enumerate(zip(chats, seeds, strict=True)):
            text = self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            for s in ss:
                prompts.append(text)
                top = greedy or s is None  # None: this row's greedy answer
                params.append(
                    self._vllm.SamplingParams(
                        n=1,
                        temperature=0.0 if top else cfg.temperature,
                        top_p=1.0 if top else cfg.top_p,
                        max_tokens=cfg.max_new_tokens,
                        seed=None if s is None else s % (2**31),
                    )
                )
                owner.append(i)
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        out: list[list[str]] = [[] for _ in chats]
        for i, o in zip(owner, outputs, strict=True):
            out[i].append(o.outputs[0].text.strip())
        return out


@GENERATORS.register("vllm")
def _make(cfg: GenerationConfig) -> VLLMGenerator:
    return VLLMGenerator(cfg)
