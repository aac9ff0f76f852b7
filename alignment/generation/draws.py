"""Per-sample token draws on the model's device, for the transformers backend's decoders.

Used by every decoder of `alignment.generation.hf` (`alignment generate`, `dpo-eval`, the
receipts runner). Each sample has its own `torch.Generator`, seeded with the sample's seed and
created on the device of the logits, so a sample's draws depend only on its own seed and its own
logits, never on its batch neighbours. The vocabulary-sized logits stay on that device; only
the chosen token ids come back to the host, where the decoders check them for stop tokens.

CPU and CUDA draws differ: a CUDA generator is a different random stream from a CPU one (and
CUDA kernels round the logits differently), so the same seed gives different samples on a CPU
and on a GPU. On one device a seed gives the same sample every time. On the CPU these are
exactly the draws the project made before the draw moved to the device (pinned in
tests/test_draws.py), so CPU rows are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# `pick(logits, rows)`: the next token id of each listed row (ids on the CPU); see `Picker`.
Pick = Callable[[torch.Tensor, list[int]], torch.Tensor]

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
    """Sample one token per row with its own generator after temperature and nucleus filtering.

    The generators must live on the logits' device; the result stays there too.
    """
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    # Draw in vocabulary order, not sorted order: float noise from the batch shape (~1e-7) can
    # swap two near-equal probabilities in the sort, which would change the token a seed picks.
    probs = probs.masked_fill(~nucleus(probs, top_p), 0.0)
    picks = [torch.multinomial(probs[i], 1, generator=g) for i, g in enumerate(gens)]
    return torch.cat(picks)


class Picker:
    """Chooses the next token of some rows of a decode batch: `pick(logits, rows)`.

    `logits` (len(rows), vocab) on the model's device; `rows` index `seeds`, so each row draws
    from its own generator whatever rows are still decoding. A seed of None (or `greedy`, or
    temperature 0) takes the row's most likely token instead. Returns the token ids on the CPU.
    """

    def __init__(self, seeds: list[int | None], device: torch.device | str, greedy: bool, temperature: float, top_p: float) -> None:
        self.greedy, self.temperature, self.top_p = greedy or temperature == 0, temperature, top_p
        # Generators only for sampled rows: a CUDA generator costs a device allocation each.
        self.gens = [None if self.greedy or s is None else torch.Generator(device=device).manual_seed(s) for s in seeds]

    def __call__(self, logits: torch.Tensor, rows: list[int]) -> torch.Tensor:
        logits = logits.float()
        gens = [self.gens[r] for r in rows]
        sampled = [j for j, g in enumerate(gens) if g is not None]
        out = logits.argmax(-1)
        if sampled:  # a row's draw depends only on its own logits and generator, so a subset draws the same
            out[sampled] = top_p_sample(logits[sampled], self.temperature, self.top_p, [gens[j] for j in sampled])
        return out.cpu()
