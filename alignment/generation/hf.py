"""Transformers generation backend: batched, left-padded, chat template, one RNG per sample.

Selected by `generation.backend: transformers` (`alignment generate CONFIG`). The decode loop
is written here rather than calling `model.generate` because each sample needs its own
`torch.Generator`: that is what makes a sample's random draws independent of its batch
neighbours. (Its logits are not bitwise so: the neighbours set the padding of the batched path,
and on the shared-prefix path a prompt that opens like an earlier one in the batch reuses that
one's cache for the shared tokens. Both are equal up to rounding; in bf16 an occasional token
differs, e.g. 1 of 384 samples of `make run` when this reuse came in. A fixed config plans the
same batches every time, so its rows are reproducible and resume exactly.)

Decoders (`TransformersGenerator.runtime["decoder"]` says which one ran):

- `shared-prefix` (default for Llama-architecture models): each distinct prompt is prefilled
  once and all its samples attend to that one cache; finished samples leave the batch
  (alignment/generation/shared_prefix.py).
- `repeat-cache` (shared prefix on other architectures): each distinct prompt is prefilled once
  and its KV cache repeated per sample; the decode is the batched one.
- `batched` (`shared_prefix=False`): every sample prefilled and decoded as its own row.
- `static` (default on CUDA for models transformers can compile with a static cache): each
  distinct prompt is prefilled once, its cache copied per sample into a `StaticCache`, and the
  decode step is transformers' forward compiled once (CUDA graphs); never taken on a CPU
  (alignment/generation/static_decode.py). `runtime` reports the compile seconds.

All give the same tokens for the same seeds wherever their logits agree (greedy outputs
token-identical; sampling draws in vocabulary order, see `draws.top_p_sample`). Draws run on
the model's device with one generator per sample there (alignment/generation/draws.py): the
same seed gives the same sample on one device, but CPU and GPU samples differ.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import torch

import alignment.generation.shared_prefix as sp
import alignment.runtime.threads as threads
from alignment.generation.adapters import Router, Routing
from alignment.generation.base import GENERATORS, Chat, GenerationConfig
from alignment.generation.draws import Picker
from alignment.generation.models import load_model, load_tokenizer, model_path, resolve_dtype
from alignment.generation.static_decode import StaticDecoder
from alignment.generation.static_decode import unsupported_reason as static_unsupported

# Default for new generators; the benchmark and tests flip it per instance instead.
SHARED_PREFIX = True
_TOLD: set[str] = set()  # reasons for a fallback already printed once


def until_stop(ids: list[int], stop: set[int]) -> list[int]:
    """`ids` up to and including the first stop token.

    >>> until_stop([5, 6, 2, 0, 0], {2}), until_stop([5, 6], {2})
    ([5, 6, 2], [5, 6])
    """
    end = next((j + 1 for j, t in enumerate(ids) if t in stop), len(ids))
    return ids[:end]


def _tell(why: str, then: str) -> None:
    if why not in _TOLD:
        _TOLD.add(why)
        print(f"generation: {why}; {then}", file=sys.stderr)


class TransformersGenerator:
    """Holds a causal LM and its tokenizer."""

    def __init__(
        self,
        cfg: GenerationConfig,
        model: Any = None,
        tokenizer: Any = None,
        shared_prefix: bool | None = None,
        static: bool | None = None,
        router: Router | None = None,
    ) -> None:
        self.cfg = cfg
        # Set when `model` carries several LoRA adapters: `generate(adapters=...)` picks one per chat.
        self.router = router
        self.shared_prefix = SHARED_PREFIX if shared_prefix is None else shared_prefix
        # None: the static decoder on CUDA only. True also on a CPU (tests), uncompiled unless
        # `compile_config` is set; `compile_config` is a transformers CompileConfig.
        self.static = static
        self.compile_config: Any = None
        self._static: StaticDecoder | None = None
        path = model_path(cfg.model) if model is None or tokenizer is None else None
        self.tokenizer = tokenizer or load_tokenizer(path, cfg.trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if model is None:
            from transformers import AutoModelForCausalLM

            model = load_model(AutoModelForCausalLM, path, cfg.dtype, cfg.device, cfg.trust_remote_code)
            self.dtype_reason = resolve_dtype(cfg.dtype, cfg.device)[1]
        else:
            self.dtype_reason = "model passed in by the caller"
        self.model = model
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self.stop = {t for t in [*eos, self.tokenizer.eos_token_id] if t is not None}

    @property
    def model_id(self) -> str:
        return self.cfg.model

    @property
    def runtime(self) -> dict[str, str]:
        """What the stage manifest records: the dtype used and why, the decoder (and, for the
        static decoder, the seconds spent compiling its step)."""
        dtype = str(self.model.dtype).removeprefix("torch.")
        out = {"dtype": dtype, "dtype_reason": self.dtype_reason, "decoder": self.decoder()}
        if self._static is not None:
            out["compile_s"] = f"{self._static.compile_s:.1f}"
        return out

    def decoder(self) -> str:
        """static (CUDA), shared-prefix, repeat-cache (an architecture shared_prefix.py does not
        implement) or batched."""
        if not self.shared_prefix:
            return "batched"
        if self.static or (self.static is None and self.model.device.type == "cuda"):
            why = "LoRA adapters are routed per row (alignment/generation/adapters.py)" if self.router else None
            why = why or static_unsupported(self.model)
            if why is None:
                return "static"
            _tell(f"static-cache decoding: {why}", "using the eager decoders")
        why = sp.unsupported_reason(self.model)
        if why is None:
            return "shared-prefix"
        _tell(f"shared-prefix decoding: {why}", "repeating the prompt cache instead")
        return "repeat-cache"

    def render(self, chat: Chat) -> str:
        return self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)

    def generate(self, chats: list[Chat], seeds: list[list[int | None]], greedy: bool = False,
                 adapters: list[str] | None = None) -> list[list[str]]:
        """The `Generator` contract; with a `router`, chat i runs through the LoRA adapter
        `adapters[i]` ("__base__": none), and chats of different adapters share batches."""
        if (adapters is None) != (self.router is None):
            raise ValueError("adapters are given exactly when the generator routes LoRA adapters")
        rows = [(i, s) for i, ss in enumerate(seeds) for s in ss]
        texts = [self.render(c) for c in chats]
        out: list[list[str]] = [[] for _ in chats]
        bs = self.cfg.batch_size
        for start in range(0, len(rows), bs):
            chunk = rows[start : start + bs]
            names = None if adapters is None else [adapters[i] for i, _ in chunk]
            decoded = self._decode([texts[i] for i, _ in chunk], [s for _, s in chunk], greedy, names)
            for (i, _), text in zip(chunk, decoded, strict=True):
                out[i].append(text)
        return out

    def _decode(self, prompts: list[str], seeds: list[int | None], greedy: bool, names: list[str] | None = None) -> list[str]:
        """Tokenize the distinct prompts, decode one row per seed, detokenize. With adapter
        `names` per row, a prompt is distinct per adapter (each adapter prefills it anew)."""
        keys = list(zip(prompts, names or [None] * len(prompts), strict=True))
        unique = list(dict.fromkeys(keys))
        ids = self.tokenizer([p for p, _ in unique], add_special_tokens=False).input_ids
        index = {k: j for j, k in enumerate(unique)}
        prompt_names = None if names is None else [str(n) for _, n in unique]
        rows = self.decode_ids(ids, [index[k] for k in keys], seeds, greedy, prompt_names)
        width = max(map(len, rows), default=0)  # pad finished rows as the batched decode runs them
        return [self._text(r + [self.tokenizer.pad_token_id] * (width - len(r))) for r in rows]

    @torch.inference_mode()
    def decode_ids(self, prompts: list[list[int]], row_prompt: list[int], seeds: list[int | None], greedy: bool,
                   prompt_names: list[str] | None = None) -> list[list[int]]:
        """New token ids of each row (row r samples prompt `row_prompt[r]` with seed `seeds[r]`,
        greedily where that seed is None),
        each ending at its first stop token (included) or at `max_new_tokens`, with the decoder
        `decoder()` names. Draws happen on the model's device (alignment/generation/draws.py).
        `prompt_names[j]`: the LoRA adapter prompt j runs through (with a `router` only)."""
        cfg, kind = self.cfg, self.decoder()
        pick = Picker(seeds, self.model.device, greedy, cfg.temperature, cfg.top_p)
        routing = Routing(self.router, prompt_names)
        if kind == "shared-prefix":
            return sp.decode(self.model, prompts, row_prompt, pick, cfg.max_new_tokens, self.stop, routing)
        if kind == "static":
            if self._static is None:
                self._static = StaticDecoder(self.model, cfg.batch_size, self._compile_config())
            return self._static.decode(prompts, row_prompt, pick, cfg.max_new_tokens, self.stop)
        return self._batched(prompts, row_prompt, pick, kind == "repeat-cache", routing)

    def _compile_config(self) -> Any:
        """What compiles the static decode step: set by the caller, else CUDA graphs on CUDA."""
        if self.compile_config is None and self.static is None:
            from transformers import CompileConfig

            # Shapes never change (static_decode.py), so no dynamic-shape graphs.
            self.compile_config = CompileConfig(dynamic=False, mode="reduce-overhead")
        return self.compile_config

    def _batched(self, prompts: list[list[int]], row_prompt: list[int], pick: Picker, repeat: bool,
                 routing: Routing) -> list[list[int]]:
        """Prefill left-padded rows (each distinct prompt once when `repeat`, its cache then
        repeated per sample; else one row per sample) and decode them together."""
        dev = self.model.device
        seqs = prompts if repeat else [prompts[p] for p in row_prompt]
        width = max(map(len, seqs))
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(s)) + s for s in seqs], device=dev)
        attn = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in seqs], device=dev)
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        with routing(range(len(prompts)) if repeat else row_prompt):
            out = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
        logits, cache = out.logits[:, -1, :], out.cache
        if repeat:
            # Repeat each prompt's row (and its KV cache) once per sample of that prompt.
            rows = torch.tensor(row_prompt, device=dev)
            cache.batch_select_indices(rows)
            logits, attn, pos = logits[rows], attn[rows], pos[rows]
        # Finished rows stay in the batch, so row r is prompt row_prompt[r] at every step.
        return self._loop(logits, cache, attn, pos[:, -1:], pick, partial(routing, row_prompt))

    def _loop(self, logits: torch.Tensor, cache: Any, attn: torch.Tensor, pos: torch.Tensor, pick: Picker,
              with_names: Any) -> list[list[int]]:
        """Sample from `logits` (one row per sample), feed the token back, repeat; new ids per row.
        `with_names()` wraps each forward (the rows' adapters)."""
        cfg, dev, n = self.cfg, self.model.device, logits.shape[0]
        done = torch.zeros(n, dtype=torch.bool)
        stop = torch.tensor(sorted(self.stop))
        new: list[torch.Tensor] = []
        for step in range(cfg.max_new_tokens):
            threads.tick()
            nxt = pick(logits, list(range(n))).masked_fill(done, self.tokenizer.pad_token_id)
            new.append(nxt)
            done |= torch.isin(nxt, stop)
            if bool(done.all()) or step + 1 == cfg.max_new_tokens:  # no forward pass for nothing
                break
            attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
            pos = pos + 1
            with with_names():
                out = self.model(input_ids=nxt[:, None].to(dev), attention_mask=attn, position_ids=pos, cache=cache, use_cache=True)
            logits, cache = out.logits[:, -1, :], out.cache
        return [until_stop(row, self.stop) for row in torch.stack(new, dim=1).tolist()]

    def _text(self, ids: list[int]) -> str:
        for j, t in enumerate(ids):
            if t in self.stop:
                ids = ids[:j]
                break
        return self.tokenizer.decode(ids, skip_special_tokens=True).strip()


@GENERATORS.register("transformers")
def _make(cfg: GenerationConfig) -> TransformersGenerator:
    return TransformersGenerator(cfg)
