"""Timing inputs shared by `alignment bench` and the device bench: a Math Book-shaped prompt of a
chosen length, built from deterministic word salad (realistic tokenization, no data files)."""

from __future__ import annotations

import random
from typing import Any

from alignment.generation.base import chat_for
from alignment.tasks.base import load_prompt, render

WORDS = (
    "the train travels at a constant speed so we divide distance by time which gives the rate "
    "then we compare each option with our value and check units carefully before choosing one "
    "answer because ratio percent profit cost price interest area volume sum of numbers equals"
).split()


def filler(rng: random.Random, tokenizer: Any, n_tokens: int, prefix: str = "") -> str:
    """Deterministic word salad of about n_tokens tokens (sentences, so tokenization is realistic)."""
    text = prefix
    while len(tokenizer(text, add_special_tokens=False).input_ids) < n_tokens:
        sentence = " ".join(rng.choice(WORDS) for _ in range(12))
        text += sentence[0].upper() + sentence[1:] + ". "
    return text.strip()


def mathbook_chat(tokenizer: Any, prompt_tokens: int, seed: int = 0) -> list[dict[str, str]]:
    rng = random.Random(seed)
    fixed = render(
        load_prompt("mathbook_query"),
        {"problems": "", "solutions": "", "question": "", "options": "", "instruction": load_prompt("mathbook_instruction")},
    )
    budget = max(prompt_tokens - len(tokenizer(fixed, add_special_tokens=False).input_ids), 30)
    values = {
        "problems": filler(rng, tokenizer, budget // 3, "Problem 1: "),
        "solutions": filler(rng, tokenizer, budget // 2, "Solution to Problem 2: "),
        "question": filler(rng, tokenizer, budget - budget // 3 - budget // 2 - 20, "Question: "),
        "options": "(A) 12 (B) 15 (C) 18 (D) 20 (E) 24",
        "instruction": load_prompt("mathbook_instruction"),
    }
    return chat_for(load_prompt("mathbook_system"), render(load_prompt("mathbook_query"), values))


