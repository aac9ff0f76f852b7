"""Shared-prefix decoding: N samples of a prompt attend to one copy of the prompt's KV cache.

Used by the transformers generator (`alignment generate`, `generation.backend: transformers`)
when a batch holds several samples of the same prompt. A plain batched decode keeps one copy of
the prompt cache per sample and grows it by concatenation, so with a 1,500-token prompt and 16
samples each step reads (and re-copies) about a gigabyte that is identical in every row.

Here each distinct prompt is prefilled once with the model's own forward (a transformers
`DynamicCache`); its keys and values are kept once per layer. A prompt that begins with the
same tokens as one prefilled before it in the batch (Math Book's original and counterfactual
prompts share the chat header and most of the book) runs the model only on the rest, attending
to the earlier prompt's cache for the shared tokens (`prefill_all`). Decoding then runs an explicit
forward over the model's own modules (embedding, per-layer norms, q/k/v/o projections, rotary
embedding, MLP, final norm, lm_head), so no transformers internals are patched. Attention of a
new token is split in two parts and merged exactly by log-sum-exp:

- over the shared prefix: every row of a prompt, every query head of a key/value group, in one
  batched matmul against the single prefix cache (the cache is read once per step, not per row);
- over the row's own suffix: the tokens it generated so far, in a buffer preallocated for
  `max_new_tokens`, written in place each step (no concatenation).

All rows of a decode batch have generated the same number of tokens, so the suffix needs no
mask; a row that emits a stop token is dropped from the batch. Only the Llama architecture is
implemented (`supported`); the generator falls back to its generic path for others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

import alignment.runtime.threads as threads
from alignment.generation.adapters import NO_ROUTING, Routing
from alignment.generation.draws import Pick

SUPPORTED = ("llama",)


def unsupported_reason(model: Any) -> str | None:
    """Why `model` cannot use this decoder (None when it can)."""
    from transformers import LlamaForCausalLM

    kind = getattr(model.config, "model_type", "?")
    if kind not in SUPPORTED or not isinstance(model, LlamaForCausalLM):
        return f"model_type {kind!r} ({type(model).__name__}) is not implemented (only {', '.join(SUPPORTED)})"
    return None


@dataclass
class Prefix:
    """One prompt's cache: keys and values per layer, (kv_heads, length, head_dim) each."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    logits: torch.Tensor  # next-token logits after the prompt, (vocab,)

    @property
    def length(self) -> int:
        return self.keys[0].shape[1]


@torch.inference_mode()
def prefill(model: Any, ids: list[int]) -> Prefix:
    """Run the prompt through the model's own forward once (batch 1, no padding)."""
    x = torch.tensor([ids], device=model.device)
    return _as_prefix(model(input_ids=x, use_cache=True, logits_to_keep=1))


def _as_prefix(out: Any) -> Prefix:
    """A batch-1 forward's cache and last logits as a `Prefix`."""
    layers = out.cache.layers
    return Prefix([la.keys[0] for la in layers], [la.values[0] for la in layers], out.logits[0, -1])


MIN_SHARED = 16  # shorter common runs are prefilled again: too little to save


def common_length(a: list[int], b: list[int]) -> int:
    """Number of leading tokens `a` and `b` share.

    >>> common_length([1, 2, 3, 4], [1, 2, 5]), common_length([1], [2]), common_length([1, 2], [1, 2])
    (2, 0, 2)
    """
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@torch.inference_mode()
def prefill_from(model: Any, base: Prefix, shared: int, ids: list[int]) -> Prefix:
    """Prefill `ids`, whose first `shared` tokens are `base`'s: only the rest runs, attending to
    `base`'s cache of those tokens (`base` itself is not changed)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    for i, (k, v) in enumerate(zip(base.keys, base.values, strict=True)):
        cache.update(k[None, :, :shared], v[None, :, :shared], i)
    x = torch.tensor([ids[shared:]], device=model.device)
    pos = torch.arange(shared, len(ids), device=model.device)[None]
    return _as_prefix(model(input_ids=x, position_ids=pos, cache=cache, use_cache=True, logits_to_keep=1))


def prefill_all(model: Any, prompts: list[list[int]], routing: Routing = NO_ROUTING) -> list[Prefix]:
    """One prefix per prompt; each reuses the longest leading run it shares with an earlier one
    (at least `MIN_SHARED` tokens, and never the last token, whose logits are needed) that runs
    through the same adapter (`routing`: another adapter's keys differ for the same tokens)."""
    out: list[Prefix] = []
    for j, ids in enumerate(prompts):
        shared, base = max(((min(common_length(prompts[i], ids), len(ids) - 1), i) for i in range(j) if routing.same(i, j)),
                           default=(0, -1))
        with routing([j]):
            out.append(prefill_from(model, out[base], shared, ids) if shared >= MIN_SHARED else prefill(model, ids))
    return out


class Batch:
    """Rows being decoded: their prompts (contiguous groups), positions and suffix caches."""

    def __init__(self, model: Any, prefixes: list[Prefix], row_prefix: list[int], capacity: int) -> None:
        assert row_prefix == sorted(row_prefix), "rows of one prompt must be contiguous"
        cfg = model.config
        self.prefixes, self.row_prefix, self.steps = prefixes, list(row_prefix), 0
        kv, hd = cfg.num_key_value_heads, getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        shape = (len(row_prefix), kv, max(capacity, 1), hd)
        dev, dt = model.device, model.dtype
        self.k = [torch.empty(shape, device=dev, dtype=dt) for _ in range(cfg.num_hidden_layers)]
        self.v = [torch.empty(shape, device=dev, dtype=dt) for _ in range(cfg.num_hidden_layers)]

    def groups(self) -> list[tuple[int, int, Prefix]]:
        """(start, stop, prefix) for each run of rows sharing a prompt."""
        out, start = [], 0
        for i in range(1, len(self.row_prefix) + 1):
            if i == len(self.row_prefix) or self.row_prefix[i] != self.row_prefix[start]:
                out.append((start, i, self.prefixes[self.row_prefix[start]]))
                start = i
        return out

    def positions(self) -> torch.Tensor:
        lengths = [self.prefixes[p].length for p in self.row_prefix]
        return torch.tensor(lengths, device=self.k[0].device)[:, None] + self.steps

    def keep(self, rows: list[int]) -> None:
        """Drop every row not in `rows` (finished samples); copies only the small suffix caches."""
        idx = torch.tensor(rows, device=self.k[0].device)
        self.k = [k.index_select(0, idx) for k in self.k]
        self.v = [v.index_select(0, idx) for v in self.v]
        self.row_prefix = [self.row_prefix[r] for r in rows]


def _partial(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> tuple[torch.Tensor, ...]:
    """Unnormalised softmax attention over one block of keys: (max, sum of exp, weighted values)."""
    # Scaling the few queries instead of the many scores saves a pass over the scores (and is
    # exact for power-of-two scales such as 1/8 at head_dim 64); exp runs in place for the same reason.
    s = torch.matmul(q * scale, k.transpose(-1, -2)).float()
    m = s.amax(-1, keepdim=True)
    e = s.sub_(m).exp_()
    return m, e.sum(-1, keepdim=True), torch.matmul(e.to(v.dtype), v).float()


def merged_attention(q: torch.Tensor, batch: Batch, layer: int, scale: float) -> torch.Tensor:
    """Attention of one new token per row over its prompt prefix and its own suffix.

    q: (rows, kv_heads, group, head_dim), the query heads of a key/value head side by side.
    Returns (rows, kv_heads, group, head_dim) in q's dtype.
    """
    rows, kv, g, hd = q.shape
    parts = []
    for a, b, prefix in batch.groups():
        # All rows and query heads of a kv head become one matrix against the shared prefix.
        qg = q[a:b].permute(1, 0, 2, 3).reshape(kv, (b - a) * g, hd)
        m, s, o = _partial(qg, prefix.keys[layer], prefix.values[layer], scale)
        parts.append([t.view(kv, b - a, g, -1).permute(1, 0, 2, 3) for t in (m, s, o)])
    mp, sp, op = (torch.cat(t) if len(parts) > 1 else t[0] for t in zip(*parts, strict=True))
    n = batch.steps + 1
    ms, ss, os_ = _partial(q, batch.k[layer][:, :, :n], batch.v[layer][:, :, :n], scale)
    m = torch.maximum(mp, ms)
    wp, ws = torch.exp(mp - m), torch.exp(ms - m)
    return ((op * wp + os_ * ws) / (sp * wp + ss * ws)).to(q.dtype)


@torch.inference_mode()
def step(model: Any, batch: Batch, tokens: torch.Tensor) -> torch.Tensor:
    """Feed one token per row (at its next position); returns next-token logits (rows, vocab)."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    body = model.model
    h = body.embed_tokens(tokens.to(model.device)[:, None])  # (rows, 1, hidden)
    cos, sin = body.rotary_emb(h, batch.positions())
    rows, t = h.shape[0], batch.steps
    for i, layer in enumerate(body.layers):
        attn = layer.self_attn
        x = layer.input_layernorm(h)
        q = attn.q_proj(x).view(rows, 1, -1, attn.head_dim).transpose(1, 2)
        k = attn.k_proj(x).view(rows, 1, -1, attn.head_dim).transpose(1, 2)
        v = attn.v_proj(x).view(rows, 1, -1, attn.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        batch.k[i][:, :, t] = k[:, :, 0]
        batch.v[i][:, :, t] = v[:, :, 0]
        kv = k.shape[1]
        o = merged_attention(q.view(rows, kv, -1, attn.head_dim), batch, i, attn.scaling)
        h = h + attn.o_proj(o.reshape(rows, 1, -1))
        h = h + layer.mlp(layer.post_attention_layernorm(h))
    batch.steps += 1
    return model.lm_head(body.norm(h))[:, -1]


def decode(
    model: Any,
    prompts: list[list[int]], row_prompt: list[int], pick: Pick, max_new_tokens: int, stop: set[int],
    routing: Routing = NO_ROUTING,
) -> list[list[int]]:
    """New tokens per row (each ends at its first stop token, included, or at the budget).

    `prompts` are token ids of the distinct prompts, `row_prompt[r]` the prompt of row r, and
    `pick(logits, rows)` chooses the next token of each listed row from its logits (on the
    model's device; it returns the ids on the CPU, e.g. `draws.Picker`), so a row's choices
    depend on nothing but its own logits and its own random stream. `routing` gives each prompt's
    rows their LoRA adapter (`alignment.generation.adapters`).
    """
    prefixes = prefill_all(model, prompts, routing)
    order = sorted(range(len(row_prompt)), key=lambda r: row_prompt[r])  # group rows by prompt
    batch = Batch(model, prefixes, [row_prompt[r] for r in order], max_new_tokens - 1)
    logits = torch.stack([prefixes[row_prompt[r]].logits for r in order])
    active, out = order, [[] for _ in row_prompt]
    for n in range(max_new_tokens):
        threads.tick()
        tokens = pick(logits, active)
        alive = []
        for j, (r, tok) in enumerate(zip(active, tokens.tolist(), strict=True)):
            out[r].append(tok)
            if tok not in stop:
                alive.append(j)
        if not alive or n + 1 == max_new_tokens:
            break
        if len(alive) < len(active):
            batch.keep(alive)
            active, tokens = [active[j] for j in alive], tokens[alive]
        with routing(batch.row_prefix):
            logits = step(model, batch, tokens)
    return out
