"""`pytest tests/test_shared_prefix.py`: shared-prefix scoring and generation equal the naive paths.

Tiny random models (tests/conftest.py) in fp32: packed scoring must match full-sequence scoring
within 1e-4 for both reward backends, whatever the batch size or response order. The
shared-prefix decoder (all samples attend to one prompt cache, finished rows leave the batch)
must give logits within 1e-4 of a plain full-sequence forward and texts token-identical to the
naive batched decode, greedy and sampled; other architectures fall back and say so once.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from alignment.generation import shared_prefix as sp
from alignment.generation.base import GenerationConfig, chat_for
from alignment.generation.hf import TransformersGenerator
from alignment.reward.base import RewardConfig, pack_rows, split_shared
from alignment.reward.classifier import ClassifierRM
from alignment.reward.judge_rm import JudgeRM

PROMPT = chat_for("You are a careful math tutor.", "Problem 1: x = 12 + 3. Options: (A) 12 (B) 15 (C) 18")
RESPONSES = [
    "The answer is (B).",
    "Therefore, the answer is (A) because 12 + 3 = 15 km/h",
    "x = 15, so (B)",
    "",
    "Problem 2: Solution to Problem 1 is (C) 18 dollars.",
]
SUFFIXES = ["", "\n\nNote: I relied on the worked solution given in the math book to reach this answer."]


def _rm(kind: str, path, shared: bool, batch_size: int = 4):
    cfg = RewardConfig(backend=kind, model=str(path), dtype="float32", device="cpu", batch_size=batch_size, shared_prefix=shared)
    return ClassifierRM(cfg) if kind == "classifier" else JudgeRM(cfg)


@pytest.fixture(scope="module", params=["classifier", "judge"])
def rm_pair(request, tiny_classifier_dir, tiny_llama_dir):
    path = tiny_classifier_dir if request.param == "classifier" else tiny_llama_dir
    return _rm(request.param, path, shared=True), _rm(request.param, path, shared=False)


def test_shared_equals_naive(rm_pair) -> None:
    shared, naive = rm_pair
    a = shared.score(PROMPT, RESPONSES, SUFFIXES)
    b = naive.score(PROMPT, RESPONSES, SUFFIXES)
    assert a.shape == (len(RESPONSES), len(SUFFIXES))
    assert np.abs(a - b).max() < 1e-4
    assert np.abs(a[:, 0] - a[:, 1]).max() > 1e-6  # the suffix really changes the score


def test_independent_of_batch_size_and_order(rm_pair) -> None:
    shared, _ = rm_pair
    ref = shared.score(PROMPT, RESPONSES, SUFFIXES)
    perm = [3, 1, 4, 0, 2]
    for bs in (1, 2, 3, 16):
        shared.cfg.batch_size = bs
        got = shared.score(PROMPT, [RESPONSES[i] for i in perm], SUFFIXES)
        assert np.abs(got - ref[perm]).max() < 1e-5
    shared.cfg.batch_size = 4
    single = shared.score(PROMPT, RESPONSES[1:2], SUFFIXES)
    assert np.abs(single - ref[1:2]).max() < 1e-5


def test_split_slices_full_tokenizations() -> None:
    seqs = [[[1, 2, 3, 4, 9], [1, 2, 3, 4, 7, 8]], [[1, 2, 5, 9], [1, 2, 5, 7, 8]]]
    split = split_shared(seqs)
    assert split is not None and split.prefix == [1, 2]
    assert split.rows == [([3, 4], [[9], [7, 8]]), ([5], [[9], [7, 8]])]
    ids, mask, pos, ends = pack_rows(split.rows, 2, 0, torch.float32)
    assert pos[0].tolist() == [2, 3, 4, 4, 5]
    assert ends.tolist() == [[0, 2], [0, 4], [1, 1], [1, 3]]
    # The suffixed tail (columns 3, 4) must not see the plain tail (column 2).
    assert mask[0, 0, 3, 2 + 2] < -1e30 and mask[0, 0, 3, 2 + 1] == 0
    assert split_shared([[[1], [2]]]) is None


@pytest.mark.parametrize("temperature", [0.8, 0.0])
def test_generation_shared_is_token_identical(tiny_llama_dir, temperature: float) -> None:
    cfg = GenerationConfig(model=str(tiny_llama_dir), dtype="float32", device="cpu", max_new_tokens=12, batch_size=3, temperature=temperature)
    shared = TransformersGenerator(cfg, shared_prefix=True)
    naive = TransformersGenerator(cfg, model=shared.model, tokenizer=shared.tokenizer, shared_prefix=False)
    chats = [PROMPT, chat_for("Be brief.", "The nurse told the patient that she would be back.")]
    seeds = [[11, 12, 13, 14, 15], [21, 22]]
    a = shared.generate(chats, seeds)
    b = naive.generate(chats, seeds)
    assert a == b
    assert [len(x) for x in a] == [5, 2]
    if temperature:
        assert len(set(a[0])) > 1  # different seeds give different samples


# --- the shared-prefix decoder (alignment/generation/shared_prefix.py) ---

CHATS = [PROMPT, chat_for("Be brief.", "The nurse told the patient that she would be back."), chat_for("Hi.", "x = 1")]


def _prompt_ids(g: TransformersGenerator, chats: list) -> list[list[int]]:
    return [g.tokenizer(g.render(c), add_special_tokens=False).input_ids for c in chats]


@pytest.fixture(scope="module")
def pair(tiny_llama_dir):
    """A shared-prefix generator and a batched one over the same fp32 tiny Llama."""
    cfg = GenerationConfig(model=str(tiny_llama_dir), dtype="float32", device="cpu", max_new_tokens=24, batch_size=16)
    shared = TransformersGenerator(cfg, shared_prefix=True)
    naive = TransformersGenerator(cfg, model=shared.model, tokenizer=shared.tokenizer, shared_prefix=False)
    assert shared.decoder() == "shared-prefix" and naive.decoder() == "batched"
    return shared, naive


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-4), (torch.bfloat16, 5e-3)])
def test_decoder_logits_match_full_forward(pair, dtype, tol) -> None:
    """Each step's logits equal a plain forward over prompt + tokens so far, row by row, also
    after rows leave the batch; the prompts have different lengths and share the batch."""
    model = pair[0].model.to(dtype)
    try:
        prompts = _prompt_ids(pair[0], CHATS[:2])
        row_prompt = [0, 0, 0, 1, 1]
        prefixes = [sp.prefill(model, p) for p in prompts]
        batch = sp.Batch(model, prefixes, row_prompt, capacity=8)
        rng = torch.Generator().manual_seed(0)
        fed = [list(prompts[p]) for p in row_prompt]
        logits = torch.stack([prefixes[p].logits for p in row_prompt])
        worst = 0.0
        for step in range(8):
            with torch.inference_mode():
                full = torch.stack([model(input_ids=torch.tensor([ids])).logits[0, -1] for ids in fed])
            worst = max(worst, float((logits.float() - full.float()).abs().max()))
            if step == 4:  # rows 1 and 3 finish: drop them
                keep = [0, 2, 4]
                batch.keep(keep)
                fed = [fed[i] for i in keep]
            tokens = torch.randint(0, model.config.vocab_size, (len(fed),), generator=rng)
            for ids, t in zip(fed, tokens.tolist(), strict=True):
                ids.append(t)
            logits = sp.step(model, batch, tokens)
        assert batch.k[0].shape[0] == 3 and batch.row_prefix == [0, 0, 1]
        assert worst < tol, worst
    finally:
        model.float()


def test_prefix_is_held_once(pair, monkeypatch) -> None:
    """The prompt cache is stored once however many samples share it; per-row memory is only
    the preallocated suffix (max_new_tokens - 1 positions)."""
    shared, _ = pair
    seen: list[sp.Batch] = []
    original = sp.Batch

    class Spy(original):
        def __init__(self, *a, **k) -> None:
            super().__init__(*a, **k)
            seen.append(self)

    monkeypatch.setattr(sp, "Batch", Spy)
    prompt = _prompt_ids(shared, CHATS[:1])[0]
    shared.stop = set()  # decode the whole budget
    try:
        shared.generate(CHATS[:1], [list(range(12))])
    finally:
        shared.stop = {shared.tokenizer.eos_token_id}
    (batch,) = seen
    cfg = shared.model.config
    assert len(batch.prefixes) == 1 and batch.prefixes[0].keys[0].shape == (cfg.num_key_value_heads, len(prompt), 8)
    assert batch.k[0].shape == (12, cfg.num_key_value_heads, 23, 8)


@pytest.mark.parametrize("temperature", [0.8, 0.0])
def test_shared_decoder_equals_batched_with_early_stops(pair, monkeypatch, temperature: float) -> None:
    """Samples that stop at different steps leave the batch; every text (greedy or sampled, same
    seeds) equals the batched decode's, which keeps finished rows and pads them."""
    shared, naive = pair
    kept: list[int] = []
    keep = sp.Batch.keep
    monkeypatch.setattr(sp.Batch, "keep", lambda self, rows: (kept.append(len(rows)), keep(self, rows))[1])
    seeds = [[31, 32, 33, 34], [41, 42, 43], [51]]
    for g in pair:
        g.cfg.temperature = temperature
    try:
        free = naive.generate(CHATS, seeds)
        # Stop on tokens the free-running samples emit midway, so rows end at different steps.
        tokens = [shared.tokenizer(t, add_special_tokens=False).input_ids for o in free for t in o]
        stops = {ids[len(ids) // 2] for ids in tokens if len(ids) > 4}
        for g in pair:
            g.stop = g.stop | stops
        a, b = shared.generate(CHATS, seeds), naive.generate(CHATS, seeds)
    finally:
        for g in pair:
            g.cfg.temperature, g.stop = 0.8, {g.tokenizer.eos_token_id}
    assert a == b
    assert kept and kept == sorted(kept, reverse=True)  # rows really left the batch, step by step


def test_unsupported_architecture_falls_back_once(tiny_tokenizer, capsys) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=len(tiny_tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=512,
                                      eos_token_id=tiny_tokenizer.eos_token_id)).eval()
    cfg = GenerationConfig(dtype="float32", device="cpu", max_new_tokens=6, batch_size=8)
    shared = TransformersGenerator(cfg, model=gpt2, tokenizer=tiny_tokenizer, shared_prefix=True)
    naive = TransformersGenerator(cfg, model=gpt2, tokenizer=tiny_tokenizer, shared_prefix=False)
    seeds = [[1, 2, 3], [4, 5]]
    assert shared.generate(CHATS[:2], seeds) == naive.generate(CHATS[:2], seeds)
    shared.generate(CHATS[:2], seeds)
    assert shared.runtime["decoder"] == "repeat-cache"
    assert capsys.readouterr().err.count("'gpt2'") == 1  # said once, not per batch
    # The static-cache decoder (CUDA's default; uncompiled here) serves this architecture too.
    static = TransformersGenerator(cfg, model=gpt2, tokenizer=tiny_tokenizer, static=True)
    assert static.decoder() == "static"
    for greedy in (False, True):
        assert static.generate(CHATS[:2], seeds, greedy) == naive.generate(CHATS[:2], seeds, greedy)


def test_prefill_reuses_a_shared_leading_run(pair, monkeypatch) -> None:
    """Two prompts with the same long opening (like a Math Book original and its counterfactual):
    the second runs only its own tokens, and its cache and logits equal a full prefill's."""
    shared, naive = pair
    book = "Problem 1: 2 + 2 = ? Solution: 4. Problem 2: 3 + 5 = ? Solution: 8. "
    chats = [chat_for("Tutor.", book + "Your question: 3 + 5?"), chat_for("Tutor.", book + "Your question: 7 - 1?")]
    prompts = _prompt_ids(shared, chats)
    common = sp.common_length(*prompts)
    assert common >= sp.MIN_SHARED
    calls: list[int] = []
    real = sp.prefill_from
    monkeypatch.setattr(sp, "prefill_from", lambda m, b, n, ids: (calls.append(n), real(m, b, n, ids))[1])
    got = sp.prefill_all(shared.model, prompts)
    assert calls == [common]
    full = sp.prefill(shared.model, prompts[1])
    assert got[1].length == len(prompts[1])
    for a, b in zip(got[1].keys + got[1].values + [got[1].logits], full.keys + full.values + [full.logits], strict=True):
        assert (a - b).abs().max() < 1e-4
    seeds = [[1, 2, 3], [4, 5]]
    assert shared.generate(chats, seeds) == naive.generate(chats, seeds)
    assert shared.generate(chats, seeds, greedy=True) == naive.generate(chats, seeds, greedy=True)
    # A prompt that is entirely the start of an earlier one still runs its last token.
    again = sp.prefill_all(shared.model, [prompts[0], prompts[0]])
    assert (again[1].logits - again[0].logits).abs().max() < 1e-4 and calls[-1] == len(prompts[0]) - 1
