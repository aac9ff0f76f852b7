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

All three give the same tokens for the same seeds wherever their logits agree (greedy outputs
token-identical; sampling draws in vocabulary order, see `top_p_sample`).
"""

from __future__ import annotations

import sys
from typing import Any

import torch

import alignment.generation.shared_prefix as sp
import alignment.threads as threads
from alignment.generation.base import GENERATORS, Chat, GenerationConfig
from alignment.generation.models import load_model, load_tokenizer, resolve_dtype
from alignment.presets import resolve

# Default for new generators; the benchmark and tests flip it per instance instead.
SHARED_PREFIX = True
_TOLD: set[str] = set()  # architectures already told they fall back to repeat-cache


def nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Per row, True for the tokens of the smallest most-likely set whose mass reaches top_p.

    Works on the k most likely tokens (k grows until every row's cut falls inside them): prefix
    sums of the first k sorted probabilities do not depend on the rest, so this equals sorting
    the whole vocabulary (tens of ms per row at a 49k vocabulary) except in the order of exact
    ties. The margin keeps float rounding of the later prefix sums from moving the cut.
    """
    vocab, k = probs.shape[-1], min(256, probs.shape[-1])
    while True:
        top, idx = probs.topk(k, dim=-1)
        before = top.cumsum(-1) - top  # mass ranked above each token (the top one always stays)
        if k == vocab or bool((before[:, -1] >= top_p + 1e-6).all()):
            return torch.zeros_like(probs, dtype=torch.bool).scatter(1, idx, before < top_p)
        k = min(4 * k, vocab)


def top_p_sample(logits: torch.Tensor, temperature: float, top_p: float, gens: list[torch.Generator]) -> torch.Tensor:
    """Sample one token per row with its own generator after temperature and nucleus filtering."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    # Draw in vocabulary order, not sorted order: float noise from the batch shape (~1e-7) can
    # swap two near-equal probabilities in the sort, which would change the token a seed picks.
    probs = probs.masked_fill(~nucleus(probs, top_p), 0.0)
    picks = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(gens)]
    return torch.cat(picks)


class TransformersGenerator:
    """Holds a causal LM and its tokenizer."""

    def __init__(
        self, cfg: GenerationConfig, model: Any = None, tokenizer: Any = None, shared_prefix: bool | None = None
    ) -> None:
        self.cfg = cfg
        self.shared_prefix = SHARED_PREFIX if shared_prefix is None else shared_prefix
        path = resolve(cfg.model) if model is None or tokenizer is None else None
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
        """What the stage manifest records: the dtype used and why, and the decoder."""
        dtype = str(self.model.dtype).removeprefix("torch.")
        return {"dtype": dtype, "dtype_reason": self.dtype_reason, "decoder": self.decoder()}

    def decoder(self) -> str:
        """shared-prefix, repeat-cache (an architecture shared_prefix.py does not implement) or batched."""
        if not self.shared_prefix:
            return "batched"
        why = sp.unsupported_reason(self.model)
        if why is None:
            return "shared-prefix"
        if why not in _TOLD:
            _TOLD.add(why)
            print(f"generation: shared-prefix decoding: {why}; repeating the prompt cache instead", file=sys.stderr)
        return "repeat-cache"

    def render(self, chat: Chat) -> str:
        return self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)

    def generate(self, chats: list[Chat], seeds: list[list[int]], greedy: bool = False) -> list[list[str]]:
        rows = [(i, s) for i, ss in enumerate(seeds) for s in ss]
        texts = [self.render(c) for c in chats]
        out: list[list[str]] = [[] for _ in chats]
        bs = self.cfg.batch_size
        for start in range(0, len(rows), bs):
            chunk = rows[start : start + bs]
            decoded = self._decode([texts[i] for i, _ in chunk], [s for _, s in chunk], greedy)
            for (i, _), text in zip(chunk, decoded, strict=True):
                out[i].append(text)
        return out

    @torch.inference_mode()
    def _decode(self, prompts: list[str], seeds: list[int], greedy: bool) -> list[str]:
        """Prefill, then sample one row per seed, with the decoder `decoder()` names."""
        kind = self.decoder()
        if kind == "shared-prefix":
            return self._shared(prompts, seeds, greedy)
        dev = self.model.device
        unique = list(dict.fromkeys(prompts)) if kind == "repeat-cache" else prompts
        enc = self.tokenizer(unique, return_tensors="pt", padding=True, add_special_tokens=False).to(dev)
        attn = enc.attention_mask
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        out = self.model(input_ids=enc.input_ids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
        logits, cache = out.logits[:, -1, :], out.cache
        if kind == "repeat-cache":
            # Repeat each prompt's row (and its KV cache) once per sample of that prompt.
            rows = torch.tensor([unique.index(p) for p in prompts], device=dev)
            cache.batch_select_indices(rows)
            logits, attn, pos = logits[rows], attn[rows], pos[rows]
        return self._loop(logits, cache, attn, pos[:, -1:], seeds, greedy)

    def _shared(self, prompts: list[str], seeds: list[int], greedy: bool) -> list[str]:
        cfg = self.cfg
        unique = list(dict.fromkeys(prompts))
        ids = self.tokenizer(unique, add_special_tokens=False).input_ids
        gens = [torch.Generator(device="cpu").manual_seed(s) for s in seeds]
        greedy = greedy or cfg.temperature == 0

        def pick(logits: torch.Tensor, rows: list[int]) -> torch.Tensor:
            if greedy:
                return logits.argmax(-1)
            return top_p_sample(logits, cfg.temperature, cfg.top_p, [gens[r] for r in rows])

        rows = sp.decode(self.model, ids, [unique.index(p) for p in prompts], pick, cfg.max_new_tokens, self.stop)
        width = max(map(len, rows), default=0)  # pad like the batched decode, so texts match
        return [self._text(r + [self.tokenizer.pad_token_id] * (width - len(r))) for r in rows]

    def _loop(
        self, logits: torch.Tensor, cache: Any, attn: torch.Tensor, pos: torch.Tensor, seeds: list[int], greedy: bool
    ) -> list[str]:
        """Sample from `logits` (one row per sample), feed the token back, repeat; texts per row."""
        cfg, tok, dev = self.cfg, self.tokenizer, self.model.device
        gens = [torch.Generator(device="cpu").manual_seed(s) for s in seeds]
        greedy = greedy or cfg.temperature == 0
        done = torch.zeros(len(seeds), dtype=torch.bool)
        stop = torch.tensor(sorted(self.stop))
        new: list[torch.Tensor] = []
        for step in range(cfg.max_new_tokens):
            threads.tick()
            logits = logits.float().cpu()
            nxt = logits.argmax(-1) if greedy else top_p_sample(logits, cfg.temperature, cfg.top_p, gens)
            nxt = nxt.masked_fill(done, tok.pad_token_id)
            new.append(nxt)
            done |= torch.isin(nxt, stop)
            if bool(done.all()) or step + 1 == cfg.max_new_tokens:  # no forward pass for nothing
                break
            attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
            pos = pos + 1
            out = self.model(input_ids=nxt[:, None].to(dev), attention_mask=attn, position_ids=pos, cache=cache, use_cache=True)
            logits, cache = out.logits[:, -1, :], out.cache
        tokens = torch.stack(new, dim=1) if new else torch.zeros((len(seeds), 0), dtype=torch.long)
        return [self._text(row) for row in tokens.tolist()]

    def _text(self, ids: list[int]) -> str:
        for j, t in enumerate(ids):
            if t in self.stop:
                ids = ids[:j]
                break
        return self.tokenizer.decode(ids, skip_special_tokens=True).strip()


@GENERATORS.register("transformers")
def _make(cfg: GenerationConfig) -> TransformersGenerator:
    return TransformersGenerator(cfg)
