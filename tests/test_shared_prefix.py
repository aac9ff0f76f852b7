"""`pytest tests/test_shared_prefix.py`: shared-prefix scoring and generation equal the naive paths.

Tiny random models (tests/conftest.py) in fp32: packed scoring must match full-sequence scoring
within 1e-4 for both reward backends, whatever the batch size or response order, and N samples
decoded from one prefilled, repeated cache must be token-identical to the naive batched decode.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

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
