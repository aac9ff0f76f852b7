"""Static-shape decoding on a GPU: transformers' `StaticCache` and its compiled forward.

Used by the transformers generator on CUDA (`TransformersGenerator.decoder()` == "static";
`alignment generate`, `dpo-eval`). On a GPU the eager shared-prefix decoder
(shared_prefix.py) is bound by kernel launches: at the Llama-3.1-8B shape one eager step of 16
rows took 45 ms where the weights take ~4 ms to read. Here the decode step is
transformers' own forward over a `StaticCache`, compiled once (`model.get_compiled_call`,
`mode="reduce-overhead"`: CUDA graphs), so a step is one graph replay.

Each distinct prompt is still prefilled once (`shared_prefix.prefill_all`, which also reuses a
leading run shared with an earlier prompt). Its keys and values are then copied into every row
of that prompt in the static cache, left-padded to the batch's longest prompt: all rows write
their next token at the same cache slot, the 2-D attention mask hides each row's padding and
`position_ids` carry each row's true positions. Shapes never change between steps or batches:
the batch is padded to a fixed row count with dummy rows and the cache length is a power of
two, so the forward compiles once per generator, i.e. once per model load (again only when a
longer prompt needs a longer cache). `compile_s` and `compiles` say what that cost. Finished rows stay in the batch
(static shapes), as in the batched decode; the loop ends when every row has stopped.

On a CPU the generator never takes this path; tests run it uncompiled (or compiled with the
"eager" backend, which traces the graph without generating code) to check it gives the tokens
of the other decoders.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import torch

import alignment.generation.shared_prefix as sp
import alignment.runtime.threads as threads
from alignment.generation.draws import Pick

MIN_CACHE = 256


def unsupported_reason(model: Any) -> str | None:
    """Why `model` cannot decode through a static cache here (None when it can)."""
    from transformers import StaticCache
    from transformers.cache_utils import StaticLayer

    if not getattr(model, "_can_compile_fullgraph", False):
        return f"{type(model).__name__} does not support a compiled static cache"
    layers = StaticCache(config=model.config, max_cache_len=1).layers
    if any(type(la) is not StaticLayer for la in layers):  # sliding-window or hybrid layers
        return f"{type(model).__name__} has non-global attention layers"
    return None


def cache_length(needed: int) -> int:
    """The static cache length for `needed` slots: a power of two, at least MIN_CACHE.

    >>> cache_length(10), cache_length(1678), cache_length(2048), cache_length(2049)
    (256, 2048, 2048, 4096)
    """
    return max(MIN_CACHE, 1 << (needed - 1).bit_length())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class StaticDecoder:
    """Decodes batches of rows through one static cache with a (possibly compiled) forward.

    `compile_config` is a transformers `CompileConfig` (None: the plain forward). `rows` is the
    fixed batch size; smaller batches are padded with dummy rows, larger ones grow it.
    """

    def __init__(self, model: Any, rows: int, compile_config: Any = None) -> None:
        self.model, self.rows, self.compile_config = model, rows, compile_config
        self.cache: Any = None
        self.length = 0
        self.compile_s = 0.0  # seconds spent compiling (warm-up calls of each new shape)
        self.compiles = 0  # shapes compiled so far (1 unless a longer prompt came)
        self.forward: Callable[..., Any] = model.__call__

    def _allocate(self, rows: int, length: int, like: torch.Tensor) -> None:
        """A zeroed static cache of `rows` x `length` with the heads and head size of `like`
        (a prompt's keys, (kv_heads, length, head_dim)); compiles the step for the new shape."""
        from transformers import StaticCache

        model = self.model
        self.rows, self.length, self.cache = rows, length, None  # free the old cache first
        cache = StaticCache(config=model.config, max_cache_len=length)
        cache.early_initialization(rows, like.shape[0], like.shape[-1], like.dtype, like.device)
        self.cache = cache
        if self.compile_config is None:
            return
        t0 = time.perf_counter()
        try:
            forward = model.get_compiled_call(self.compile_config)
            # Compilation happens on the first calls; CUDA graphs are recorded on a later one.
            for _ in range(3):
                self._set_length(0)
                forward(**self._inputs(torch.zeros(rows, dtype=torch.long), torch.zeros(rows, dtype=torch.long),
                                       torch.ones(rows, length, dtype=torch.long)))
            _sync(model.device)
        except Exception as e:  # a missing compiler toolchain must not stop generation
            print(f"generation: static decode: torch.compile failed ({type(e).__name__}: {str(e)[:200]}); "
                  "decoding with the plain forward", file=sys.stderr)
            self.compile_config, self.forward = None, model.__call__
            return
        self.forward = forward
        self.compile_s += time.perf_counter() - t0
        self.compiles += 1

    def _set_length(self, n: int) -> None:
        for layer in self.cache.layers:
            layer.cumulative_length.fill_(n)

    def _inputs(self, tokens: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> dict[str, Any]:
        dev = self.model.device
        return {"input_ids": tokens.to(dev)[:, None], "position_ids": positions.to(dev)[:, None],
                "attention_mask": mask.to(dev), "cache": self.cache, "use_cache": True, "logits_to_keep": 1}

    def _fill(self, prefixes: list[sp.Prefix], row_prompt: list[int], width: int) -> torch.Tensor:
        """Copy each row's prompt cache into the static cache, right-aligned at `width`; returns
        the attention mask (rows, length): 0 on each row's left padding, 1 elsewhere."""
        mask = torch.ones(self.rows, self.length, dtype=torch.long)
        start = 0
        for r in range(1, self.rows + 1):  # one copy per run of rows with the same prompt
            if r < self.rows and row_prompt[r] == row_prompt[start]:
                continue
            p = prefixes[row_prompt[start]]
            pad = width - p.length
            mask[start:r, :pad] = 0
            for layer, k, v in zip(self.cache.layers, p.keys, p.values, strict=True):
                for cached, new in ((layer.keys, k), (layer.values, v)):
                    cached[start:r, :, :pad].zero_()  # masked, but kept finite (0 x NaN is NaN)
                    cached[start:r, :, pad:width].copy_(new.expand(r - start, *new.shape))
            start = r
        self._set_length(width)
        return mask.to(self.model.device)

    @torch.inference_mode()
    def decode(
        self,
        prompts: list[list[int]], row_prompt: list[int], pick: Pick, max_new_tokens: int, stop: set[int]
    ) -> list[list[int]]:
        """New tokens per row, each ending at its first stop token (included) or at the budget;
        the contract of `shared_prefix.decode`."""
        n = len(row_prompt)
        prefixes = sp.prefill_all(self.model, prompts)
        width = max(p.length for p in prefixes)
        rows, length = max(self.rows, n), max(self.length, cache_length(width + max_new_tokens))
        if self.cache is None or (rows, length) != (self.rows, self.length):
            self._allocate(rows, length, prefixes[0].keys[0])
        row_prompt = row_prompt + [row_prompt[0]] * (self.rows - n)  # dummy rows: any prompt
        mask = self._fill(prefixes, row_prompt, width)
        positions = torch.tensor([prefixes[p].length for p in row_prompt], device=self.model.device)
        logits = torch.stack([prefixes[p].logits for p in row_prompt])
        out: list[list[int]] = [[] for _ in range(n)]
        live = list(range(n))
        for step in range(max_new_tokens):
            threads.tick()
            tokens = pick(logits[:n], list(range(n)))
            for r in live:
                out[r].append(int(tokens[r]))
            live = [r for r in live if out[r][-1] not in stop]
            if not live or step + 1 == max_new_tokens:
                break
            fed = torch.zeros(self.rows, dtype=torch.long)  # dummy rows are fed token 0
            fed[:n] = tokens
            logits = self.forward(**self._inputs(fed, positions + step, mask)).logits[:, -1]
        return out

