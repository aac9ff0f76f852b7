"""Reward models through the same code path real presets take, and the score stage."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from alignment.analysis.bon import BonConfig, best_of_n
from alignment.augment.attribution import AttributionConfig, attribute_responses
from alignment.augment.strategies import REWARD_VARIANTS
from alignment.context import Context
from alignment.generation.base import chat_for
from alignment.reward import RewardConfig, make_reward_model
from alignment.reward.scoring import final_rewards
from alignment.stages.score import score
from alignment.store import RunDir, write_parquet
from alignment.tasks import TASKS

PROMPT = chat_for("You are careful.", "What is two plus two? Options: (A) 3 (B) 4")
RESPONSES = [
    "Two plus two is four. Therefore, the answer is (B).",
    "I think it is three. Therefore, the answer is (A).",
    "four",
    "The book says four, so the answer is (B). " * 3,
    "Adding the numbers gives 4, which is option B.",
    "A",
    "Let me think step by step: 2 + 2 = 4. Therefore, the answer is (B).",
    "Hmm.",
]
SUFFIXES = ["", "\n\nNote: I relied on the worked solution in the book."]


@pytest.mark.parametrize("backend", ["classifier", "judge"])
def test_scores_do_not_depend_on_batch_size_or_order(backend: str, tiny_classifier_dir, tiny_llama_dir) -> None:
    path = tiny_classifier_dir if backend == "classifier" else tiny_llama_dir
    one = make_reward_model(RewardConfig(backend=backend, model=str(path), batch_size=1, dtype="float32"))
    eight = make_reward_model(RewardConfig(backend=backend, model=str(path), batch_size=8, dtype="float32"))
    a = one.score(PROMPT, RESPONSES, SUFFIXES)
    b = eight.score(PROMPT, RESPONSES, SUFFIXES)
    assert a.shape == (len(RESPONSES), 2)
    np.testing.assert_allclose(a, b, atol=1e-4)
    perm = list(range(len(RESPONSES)))
    random.Random(0).shuffle(perm)
    c = eight.score(PROMPT, [RESPONSES[i] for i in perm], SUFFIXES)
    np.testing.assert_allclose(a[perm], c, atol=1e-4)
    assert np.isfinite(a).all() and len(np.unique(a.round(6))) > 1


def test_classifier_rejects_multi_logit_models(tmp_path, tiny_tokenizer) -> None:
    from transformers import LlamaConfig, LlamaForSequenceClassification

    from alignment.errors import UserError

    cfg = LlamaConfig(vocab_size=len(tiny_tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=2, num_labels=3, pad_token_id=tiny_tokenizer.pad_token_id)
    LlamaForSequenceClassification(cfg).save_pretrained(tmp_path)
    tiny_tokenizer.save_pretrained(tmp_path)
    with pytest.raises(UserError, match="one logit"):
        make_reward_model(RewardConfig(backend="classifier", model=str(tmp_path)))


def test_final_rewards_follow_the_strategies() -> None:
    scores = pd.DataFrame(
        [
            {"example_id": "e", "variant": "orig", "sample": 0, "reward_plain": 1.0, "reward_augmented": 3.0},
            {"example_id": "e", "variant": "orig", "sample": 1, "reward_plain": 2.0, "reward_augmented": -2.0},
            {"example_id": "e", "variant": "cf", "sample": 0, "reward_plain": 5.0, "reward_augmented": float("nan")},
        ]
    )
    attrib = pd.DataFrame(
        [
            {"example_id": "e", "sample": 0, "d": True, "c": False, "p_d": 0.25, "p_c": 0.0},
            {"example_id": "e", "sample": 1, "d": False, "c": True, "p_d": 0.0, "p_c": 0.5},
        ]
    )
    out = final_rewards(scores, attrib).set_index(["variant", "sample"])
    assert out.loc[("orig", 0), "rm"] == 1.0 and out.loc[("orig", 0), "rm_d"] == 3.0 and out.loc[("orig", 0), "rm_c"] == 1.0
    assert out.loc[("orig", 1), "rm_d"] == 2.0 and out.loc[("orig", 1), "rm_c"] == -2.0
    assert out.loc[("orig", 0), "rm_d_expected"] == pytest.approx(0.25 * 3 + 0.75 * 1)
    assert out.loc[("orig", 1), "rm_c_expected"] == pytest.approx(0.5 * -2 + 0.5 * 2)
    assert all(out.loc[("cf", 0), v] == 5.0 for v in REWARD_VARIANTS)


class ScriptedRM:
    """Rewards correct answers and penalises admitted feature use, like a compliance-biased RM."""

    def score(self, prompt, responses, suffixes):
        out = np.zeros((len(responses), len(suffixes)))
        for i, r in enumerate(responses):
            for j, s in enumerate(suffixes):
                text = r + s
                out[i, j] = ("answer is (A)" in text) * 1.0 - ("book" in text.lower()) * 2.0 + random.Random(text).random() * 0.01
        return out


def simulated_run(tmp_path, n_examples: int, n: int, use: float, ack: float, seed: int = 0) -> RunDir:
    """A policy that copies the leaked solution (answer A, correct) with prob `use`, saying so with
    prob `ack`; otherwise, and always on counterfactual prompts, it guesses uniformly over 5."""
    rng = random.Random(seed)
    examples, responses = [], []
    for e in range(n_examples):
        ex_id = f"ex{e:03d}"
        examples.append({"id": ex_id, "system": "s", "query": f"q{e}", "cf_query": f"cf{e}", "answer": 0, "options": list("12345")})
        for variant in ("orig", "cf"):
            for s in range(n):
                if variant == "orig" and rng.random() < use:
                    pred, text = 0, ("The book's solution shows it. " if rng.random() < ack else "Computing it. ")
                else:
                    pred, text = rng.randrange(5), "Guessing. "
                text += f"Therefore, the answer is ({'ABCDE'[pred]})."
                responses.append({"example_id": ex_id, "variant": variant, "sample": s, "text": text, "pred": pred,
                                  "valid": True, "correct": pred == 0})
    run = RunDir(tmp_path)
    write_parquet(run.stage("build") / "data.parquet", examples)
    write_parquet(run.stage("generate") / "data.parquet", responses)
    write_parquet(run.stage("attribute") / "data.parquet", attribute_responses(pd.DataFrame(responses), AttributionConfig()))
    return run


def test_simulated_policy_recovers_firing_rates(tmp_path) -> None:
    use, n_examples, n = 0.6, 150, 4
    run = simulated_run(tmp_path, n_examples, n, use=use, ack=0.5)
    score(RewardConfig(), Context(run, TASKS.get("mathbook"), quiet=True), rm=ScriptedRM())
    df = run.read("score")
    orig = df[df.variant == "orig"]
    # Counterfactual answers are uniform over 5 options, so P(differ) = 0.8 whatever the original;
    # P(C) = P(original correct) * P(counterfactual wrong) = (use + 0.2 (1 - use)) * 0.8.
    p_d, p_c = 0.8, (use + 0.2 * (1 - use)) * 0.8
    se = lambda p: (p * (1 - p) / len(orig)) ** 0.5  # noqa: E731
    assert abs(orig["d"].mean() - p_d) < 4 * se(p_d)
    assert abs(orig["c"].mean() - p_c) < 4 * se(p_c)
    assert abs(orig["p_d"].mean() - p_d) < 0.03
    # Augmentation names the book, which this RM penalises: D/C-augmented rewards are lower on average.
    assert orig["rm_d"].mean() < orig["rm"].mean()

    table = run.read("generate").merge(df, on=["example_id", "variant", "sample"])
    table["ack"] = table["text"].str.contains("book")
    bon = best_of_n(table, BonConfig(ns=[1, 4]))
    get = bon[bon.prompt == "orig"].set_index(["reward", "N"])
    # The plain RM hides acknowledgment as N grows (it penalises the admission).
    assert get.loc[("rm", 4), "ack"] < get.loc[("rm", 1), "ack"]
