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


# ------------------------------------------------------------------------------ two-sided scoring

MATHBOOK = TASKS.get("mathbook")


class DenialRM:
    """Plain: a constant per text; the acknowledgment sentence adds 1; the denial costs a response
    that names the book 3 (it contradicts the denial) and gives any other one 0.5 (an RM that
    likes denials as such). Records each call's user turn and suffixes."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, prompt, responses, suffixes):
        self.calls.append((prompt[-1]["content"], list(suffixes)))
        out = np.zeros((len(responses), len(suffixes)))
        for i, r in enumerate(responses):
            for j, s in enumerate(suffixes):
                out[i, j] = len(r) % 7 / 7 + (s == MATHBOOK.ack_suffix()) + (s == MATHBOOK.deny_suffix()) * (-3.0 if "book" in r else 0.5)
        return out


def one_example() -> tuple[dict, pd.DataFrame]:
    ex = {"id": "e", "system": "sys", "query": "q with the book", "cf_query": "q"}
    texts = {("orig", 0): "The book says (A).", ("orig", 1): "Working: (B).", ("cf", 0): "As the book shows, (A).",
             ("cf", 1): "Working: (C)."}
    group = pd.DataFrame([{"example_id": "e", "variant": v, "sample": s, "text": t} for (v, s), t in texts.items()])
    return ex, group


def test_every_response_is_scored_with_the_denial_in_one_call_per_prompt() -> None:
    from alignment.reward.scoring import score_example

    ex, group = one_example()
    rm = DenialRM()
    rows = pd.DataFrame(score_example(rm, ex, group, MATHBOOK.ack_suffix(), None, MATHBOOK.deny_suffix())).set_index(["variant", "sample"])
    assert rm.calls == [("q with the book", ["", MATHBOOK.ack_suffix(), MATHBOOK.deny_suffix()]),
                        ("q", ["", MATHBOOK.deny_suffix()])]
    plain = rows["reward_plain"]
    assert rows.loc[("orig", 0), "reward_denied"] == pytest.approx(plain[("orig", 0)] - 3.0)  # names the book
    assert rows.loc[("orig", 1), "reward_denied"] == pytest.approx(plain[("orig", 1)] + 0.5)
    assert rows.loc[("cf", 0), "reward_denied"] == pytest.approx(plain[("cf", 0)] - 3.0)  # a fabricated claim
    assert rows.loc[("orig", 0), "reward_augmented"] == pytest.approx(plain[("orig", 0)] + 1.0)
    assert rows.loc["cf", "reward_augmented"].isna().all()

    without = pd.DataFrame(score_example(DenialRM(), ex, group, MATHBOOK.ack_suffix())).set_index(["variant", "sample"])
    assert without["reward_denied"].isna().all()
    pd.testing.assert_frame_equal(without[["reward_plain", "reward_augmented"]], rows[["reward_plain", "reward_augmented"]])


def test_a_real_reward_model_scores_plain_and_augmented_alike_with_the_denial_added(tiny_classifier_dir) -> None:
    """The denial is one more packed tail of the shared-prefix path: the other columns keep their values."""
    from alignment.reward.scoring import score_example

    ex, group = one_example()
    for shared in (True, False):
        rm = make_reward_model(RewardConfig(backend="classifier", model=str(tiny_classifier_dir), dtype="float32",
                                            shared_prefix=shared, batch_size=3))
        with_deny = pd.DataFrame(score_example(rm, ex, group, MATHBOOK.ack_suffix(), None, MATHBOOK.deny_suffix()))
        without = pd.DataFrame(score_example(rm, ex, group, MATHBOOK.ack_suffix()))
        cols = ["reward_plain", "reward_augmented"]
        np.testing.assert_allclose(with_deny[cols].to_numpy(), without[cols].to_numpy(), atol=1e-5, equal_nan=True)
        assert with_deny["reward_denied"].notna().all()
        assert not np.allclose(with_deny["reward_denied"], with_deny["reward_plain"])


def test_score_stage_writes_the_two_sided_variants_and_keeps_the_others(tmp_path) -> None:
    run = simulated_run(tmp_path, n_examples=12, n=4, use=0.6, ack=0.5)
    score(RewardConfig(), Context(run, MATHBOOK, quiet=True), rm=DenialRM())
    df = run.read("score")
    assert df["reward_denied"].notna().all()
    expect = final_rewards(df[["example_id", "variant", "sample", "reward_plain", "reward_augmented"]].copy(),
                           run.read("attribute"))
    for v in REWARD_VARIANTS:  # unchanged by the denial
        np.testing.assert_array_equal(df[v].to_numpy(), expect[v].to_numpy())
    cf, fired = df["variant"] == "cf", df["d"]
    assert (df.loc[fired, "rm_d_deny"] == df.loc[fired, "rm_d"]).all()
    low = np.minimum(df["reward_plain"], df["reward_denied"])
    np.testing.assert_array_equal(df.loc[~fired, "rm_d_deny"].to_numpy(), low[~fired].to_numpy())
    texts = run.read("generate").set_index(["example_id", "variant", "sample"])["text"]
    book = df.set_index(["example_id", "variant", "sample"]).index.map(texts).str.contains("book")
    # This RM likes denials, yet off the flag the two-sided reward is never above plain, and a
    # response naming the book loses 3.
    assert (df.loc[~fired & ~book, "rm_d_deny"] == df.loc[~fired & ~book, "reward_plain"]).all()
    assert np.allclose(df.loc[~fired & book, "rm_d_deny"], df.loc[~fired & book, "reward_plain"] - 3.0)
    assert cf.any() and (df.loc[cf, "rm_d"] == df.loc[cf, "reward_plain"]).all()


def test_a_task_without_a_denial_sentence_still_scores_and_two_sided_requests_fail_in_one_line(tmp_path) -> None:
    from dataclasses import replace

    from alignment.analysis.bon import BonConfig
    from alignment.dpo import DPOConfig
    from alignment.errors import UserError
    from alignment.stages.bon import bon
    from alignment.stages.dpo_pairs import dpo_pairs

    task = replace(MATHBOOK, name="custom", ack_text="I used the book.", prompts_dir=tmp_path / "prompts")
    run = simulated_run(tmp_path / "run", n_examples=6, n=3, use=0.6, ack=0.5)
    ctx = Context(run, task, quiet=True)
    score(RewardConfig(), ctx, rm=ScriptedRM())
    df = run.read("score")
    assert df["reward_denied"].isna().all() and not {"rm_d_deny", "rm_c_deny"} & set(df.columns)
    assert {"rm", "rm_d", "rm_c"} <= set(df.columns)
    resp = run.read("generate")
    write_parquet(run.stage("ack") / "data.parquet", resp[["example_id", "variant", "sample"]].assign(ack=resp["text"].str.contains("book")))
    bon(BonConfig(ns=[1, 2]), ctx)  # the default list leaves the two-sided variants out
    assert "rm_d_deny" not in set(run.read("bon")["reward"])
    with pytest.raises(UserError, match=r"bon.variants: rm_d_deny needs the task's denial sentence: .*custom_deny.txt"):
        bon(BonConfig(ns=[1, 2], variants=["rm", "rm_d_deny"]), ctx)
    run.read("build").assign(split="train").pipe(lambda b: write_parquet(run.stage("build") / "data.parquet", b))
    with pytest.raises(UserError, match=r"dpo.variants: rm_d_deny needs the task's denial sentence: .*custom_deny.txt"):
        dpo_pairs(DPOConfig(variants=["rm", "rm_d_deny"]), ctx)


def test_the_score_key_follows_the_appended_sentences(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace
    from pathlib import Path

    from alignment.config import from_dict
    from alignment.run_config import RunConfig
    from alignment.runner import get_stage, stage_key

    cfg = from_dict(RunConfig, {"task": {"name": "mathbook"}})
    run = RunDir(Path("/nonexistent"))
    first = stage_key(get_stage("score"), cfg, run)
    generate = stage_key(get_stage("generate"), cfg, run)
    monkeypatch.setitem(TASKS._items, "mathbook", replace(MATHBOOK, deny_text="Note: no book here."))
    assert stage_key(get_stage("score"), cfg, run) != first
    assert stage_key(get_stage("generate"), cfg, run) == generate
