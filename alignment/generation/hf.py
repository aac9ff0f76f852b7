"""Transformers generation backend: batched, left-padded, chat template, one RNG per sample.

Selected by `generation.backend: transformers` (`alignment generate CONFIG`). The decode loop
is written here rather than calling `model.generate` because each sample needs its own
`torch.Generator`: that is what makes a sample independent of its batch neighbours.
"""

from __future__ import annotations

from typing import Any

import torch

from alignment.generation.base import GENERATORS, Chat, GenerationConfig
from alignment.generation.models import load_model, load_tokenizer, resolve


def top_p_sample(logits: torch.Tensor, temperature: float, top_p: float, gens: list[torch.Generator]) -> torch.Tensor:
    """Sample one token per row with its own generator after temperature and nucleus filtering."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    sorted_p, order = probs.sort(dim=-1, descending=True)
    # Keep the smallest prefix whose mass reaches top_p (the top token always survives).
    drop = sorted_p.cumsum(-1) - sorted_p >= top_p
    # Draw in vocabulary order, not sorted order: float noise from the batch shape (~1e-7) can
    # swap two near-equal probabilities in the sort, which would change the token a seed picks.
    probs = probs.masked_fill(torch.zeros_like(drop).scatter(1, order, drop), 0.0)
    picks = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(gens)]
    return torch.cat(picks)


class TransformersGenerator:
    """Holds a causal LM and its tokenizer."""

    def __init__(self, cfg: GenerationConfig, model: Any = None, tokenizer: Any = None) -> None:
        self.cfg = cfg
        path = resolve(cfg.model) if model is None or tokenizer is None else None
        self.tokenizer = tokenizer or load_tokenizer(path, cfg.trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        if model is None:
            from transformers import AutoModelForCausalLM

            model = load_model(AutoModelForCausalLM, path, cfg.dtype, cfg.device, cfg.trust_remote_code)
        self.model = model
        eos = self.model.generation_config.eos_token_id
        eos = eos if isinstance(eos, list) else [eos]
        self.stop = {t for t in [*eos, self.tokenizer.eos_token_id] if t is not None}

    @property
    def model_id(self) -> str:
        return self.cfg.model

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
        cfg, tok, dev = self.cfg, self.tokenizer, self.model.device
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(dev)
        attn = enc.attention_mask
        pos = (attn.cumsum(-1) - 1).clamp(min=0)
        gens = [torch.Generator(device="cpu").manual_seed(s) for s in seeds]
        greedy = greedy or cfg.temperature == 0
        out = self.model(input_ids=enc.input_ids, attention_mask=attn, position_ids=pos, use_cache=True, logits_to_keep=1)
        done = torch.zeros(len(prompts), dtype=torch.bool)
        new: list[torch.Tensor] = []
        for _ in range(cfg.max_new_tokens):
            logits = out.logits[:, -1, :].float().cpu()
            nxt = logits.argmax(-1) if greedy else top_p_sample(logits, cfg.temperature, cfg.top_p, gens)
            nxt = nxt.masked_fill(done, tok.pad_token_id)
            new.append(nxt)
            done |= torch.isin(nxt, torch.tensor(sorted(self.stop)))
            if bool(done.all()):
                break
            attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
            pos = pos[:, -1:] + 1
            out = self.model(input_ids=nxt[:, None].to(dev), attention_mask=attn, position_ids=pos, cache=out.cache, use_cache=True)
        tokens = torch.stack(new, dim=1) if new else torch.zeros((len(prompts), 0), dtype=torch.long)
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
