"""DPO: pair construction on hand-made reward tables, and a tiny random-Llama LoRA DPO run.

`.venv/bin/python -m pytest -q tests/test_dpo.py` (offline; the tiny model comes from conftest).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from alignment.context import Context
from alignment.dpo import DPOConfig, dpo_report_section, majority, make_pairs, split_pairs
from alignment.dpo.train import best_step, checkpoints, train_one
from alignment.errors import UserError
from alignment.stages.dpo_eval import dpo_eval
from alignment.stages.dpo_pairs import dpo_pairs
from alignment.stages.dpo_train import dpo_train
from alignment.store import RunDir, write_parquet, write_text
from alignment.tasks import TASKS


def tables(rows: list[tuple[str, int, float, bool]]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(example_id, sample, reward, valid) rows → scores, responses, examples (plus cf noise)."""
    resp = pd.DataFrame(
        [{"example_id": e, "variant": "orig", "sample": s, "text": f"{e}-{s}", "valid": v} for e, s, _, v in rows]
        + [{"example_id": e, "variant": "cf", "sample": s, "text": "cf", "valid": True} for e, s, _, _ in rows]
    )
    scores = pd.DataFrame(
        [{"example_id": e, "variant": "orig", "sample": s, "rm": r} for e, s, r, _ in rows]
        + [{"example_id": e, "variant": "cf", "sample": s, "rm": 99.0} for e, s, _, _ in rows]
    )
    ids = sorted({e for e, *_ in rows})
    examples = pd.DataFrame({"id": ids, "split": "test", "system": "sys", "query": [f"q {i}" for i in ids]})
    return scores, resp, examples


def test_pairs_pick_best_valid_and_worst_any() -> None:
    scores, resp, ex = tables([("a", 0, 1.0, True), ("a", 1, 3.0, False), ("a", 2, 2.0, True), ("a", 3, -1.0, False)])
    pairs, stats = make_pairs(scores, resp, ex, "rm")
    assert len(pairs) == 1
    p = pairs.iloc[0]
    # sample 1 has the top reward but is invalid; the counterfactual rows (reward 99) never count
    assert (p["chosen_sample"], p["rejected_sample"]) == (2, 3)
    assert p["prompt"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "q a"}]
    assert p["chosen"] == [{"role": "assistant", "content": "a-2"}]
    assert p["rejected"] == [{"role": "assistant", "content": "a-3"}]
    assert stats["mean_margin"] == pytest.approx(3.0)


def test_pairs_skip_ties_all_invalid_and_single_sample() -> None:
    scores, resp, ex = tables(
        [("tie", 0, 1.0, True), ("tie", 1, 1.0, True),
         ("bad", 0, 1.0, False), ("bad", 1, 2.0, False),
         ("one", 0, 5.0, True),
         ("ok", 0, 0.0, True), ("ok", 1, 2.0, True)]
    )
    pairs, stats = make_pairs(scores, resp, ex, "rm")
    assert pairs["example_id"].tolist() == ["ok"]
    assert stats == {"examples": 4, "pairs": 1, "skipped_no_valid": 1, "skipped_same_response": 1,
                     "skipped_equal_texts": 0, "skipped_equal_rewards": 1, "mean_margin": 2.0}


def test_pairs_with_equal_texts_are_skipped_and_counted() -> None:
    """Two samples with the same text but different rewards (strategy D can augment one and not the
    other) make no pair: there is nothing to prefer."""
    scores, resp, ex = tables([("dup", 0, 1.0, True), ("dup", 1, 3.0, True), ("ok", 0, 0.0, True), ("ok", 1, 2.0, True)])
    resp.loc[(resp["example_id"] == "dup") & (resp["variant"] == "orig"), "text"] = "the same words"
    pairs, stats = make_pairs(scores, resp, ex, "rm")
    assert pairs["example_id"].tolist() == ["ok"]
    assert stats["skipped_equal_texts"] == 1 and stats["pairs"] == 1
    assert (pairs["chosen"].map(lambda m: m[0]["content"]) != pairs["rejected"].map(lambda m: m[0]["content"])).all()


def test_pairs_chosen_is_lowest_when_only_valid() -> None:
    # The only valid response is also the lowest-reward one: same response, no pair.
    scores, resp, ex = tables([("a", 0, 0.0, True), ("a", 1, 3.0, False)])
    pairs, stats = make_pairs(scores, resp, ex, "rm")
    assert pairs.empty and stats["skipped_same_response"] == 1


def test_pairs_missing_variant_is_user_error() -> None:
    scores, resp, ex = tables([("a", 0, 0.0, True)])
    with pytest.raises(UserError, match="rm_d"):
        make_pairs(scores, resp, ex, "rm_d")


def test_split_is_seeded_by_example_and_capped() -> None:
    pairs = pd.DataFrame({"example_id": [f"e{i}" for i in range(10)]})
    a, b = split_pairs(pairs, 0.3, 1, None), split_pairs(pairs, 0.3, 1, None)
    assert a.equals(b)
    assert (a["split"] == "valid").sum() == 3 and len(a) == 10
    capped = split_pairs(pairs, 0.25, 1, 4)
    assert len(capped) == 4 and (capped["split"] == "valid").sum() == 1
    assert split_pairs(pairs.iloc[:0], 0.25, 0, 4).empty


# ------------------------------------------------------------------------------ two-sided pairs


def denial_rm(text: str, sample: int) -> tuple[float, float, float]:
    """(plain, augmented, denied) of a fake RM that likes the book a little when plain and
    penalises it under the denial (the claim contradicts the appended sentence)."""
    plain = (1.0 if "book" in text else 0.5) + 0.01 * sample
    return plain, plain + 1.0, plain - 3.0 if "book" in text else plain + 0.5


def two_sided_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two examples; D fires on original sample 0 (a true acknowledgment); original sample 2 claims
    the book though D did not fire; counterfactual sample 0 claims the absent book."""
    from alignment.reward.scoring import final_rewards

    texts = {"orig": ["The book gives (A).", "Working gives (B).", "The book hints at (C)."],
             "cf": ["The book says (A).", "Working gives (A).", "Working: (D)."]}
    resp = pd.DataFrame([{"example_id": e, "variant": v, "sample": s, "text": f"{e}: {t}", "valid": True,
                          "correct": s == 0} for e in ("a", "b") for v, ts in texts.items() for s, t in enumerate(ts)])
    scores = resp[KEYS].copy()
    scores[["reward_plain", "reward_augmented", "reward_denied"]] = [denial_rm(t, s) for t, s in zip(resp["text"], resp["sample"], strict=True)]
    scores.loc[scores["variant"] == "cf", "reward_augmented"] = float("nan")
    attrib = pd.DataFrame([{"example_id": e, "sample": s, "d": s == 0, "c": False, "p_d": float(s == 0), "p_c": 0.0}
                           for e in ("a", "b") for s in range(3)])
    examples = pd.DataFrame({"id": ["a", "b"], "split": "train", "system": "sys", "query": ["qa book", "qb book"], "cf_query": ["qa", "qb"]})
    ack = resp[KEYS].assign(ack=resp["text"].str.contains("book"))
    return final_rewards(scores, attrib), resp, examples, ack


KEYS = ["example_id", "variant", "sample"]


def test_two_sided_pairs_come_from_both_prompts_and_reject_a_fabricated_claim() -> None:
    from alignment.dpo.pairs import pair_outcomes

    scores, resp, ex, ack = two_sided_tables()
    pairs, stats = make_pairs(scores, resp, ex, "rm_d_deny")
    assert list(zip(pairs["example_id"], pairs["prompt_variant"], strict=True)) == [("a", "orig"), ("a", "cf"), ("b", "orig"), ("b", "cf")]
    assert stats["pairs"] == 4 and stats["pairs_orig"] == 2 and stats["pairs_cf"] == 2 and stats["examples"] == 2
    by = pairs.set_index(["example_id", "prompt_variant"])
    assert by.loc[("a", "cf"), "prompt"] == [{"role": "system", "content": "sys"}, {"role": "user", "content": "qa"}]
    assert by.loc[("a", "orig"), "prompt"][1]["content"] == "qa book"
    # Original: the true acknowledgment (D fired) is chosen, the unfounded claim rejected.
    assert (by.loc[("a", "orig"), "chosen_sample"], by.loc[("a", "orig"), "rejected_sample"]) == (0, 2)
    # Counterfactual: the claim of the absent book is the rejected response.
    assert by.loc[("a", "cf"), "rejected_sample"] == 0 and "book" not in by.loc[("a", "cf"), "chosen"][0]["content"]
    out = pair_outcomes(pairs.assign(split="train"), resp, ack)
    assert out["chosen_ack"] == 0.5 and out["rejected_ack"] == 1.0  # cf pairs looked up on cf rows
    assert out["chosen_correct"] == 0.5 and out["rejected_correct"] == 0.5

    # The one-sided rm_d on the same scores: original prompts only, and the cf claim never counts.
    one, st = make_pairs(scores, resp, ex, "rm_d")
    assert set(one["prompt_variant"]) == {"orig"} and len(one) == 2 and "pairs_cf" not in st
    # rm_d ranks the unfounded claim (sample 2) above the working response and rejects the latter;
    # rm_d_deny rejects the claim.
    assert one.set_index("example_id").loc["a", "rejected_sample"] == 1


def test_split_keeps_an_examples_two_prompts_together_and_caps_examples() -> None:
    pairs = pd.DataFrame({"example_id": [f"e{i}" for i in range(10) for _ in (0, 1)],
                          "prompt_variant": ["orig", "cf"] * 10})
    out = split_pairs(pairs, 0.3, 1, None)
    assert len(out) == 20 and (out["split"] == "valid").sum() == 6  # 3 of 10 examples, both prompts each
    assert (out.groupby("example_id")["split"].nunique() == 1).all()
    capped = split_pairs(pairs, 0.25, 1, 4)
    assert capped["example_id"].nunique() == 4 and len(capped) == 8
    # Each example's original pair stays before its counterfactual one.
    assert capped.groupby("example_id")["prompt_variant"].apply(list).map(lambda v: v == ["orig", "cf"]).all()
    # The examples kept and their splits are those of the one-row-per-example frame with the same seed.
    single = split_pairs(pairs[pairs["prompt_variant"] == "orig"], 0.25, 1, 4)
    assert dict(zip(single["example_id"], single["split"], strict=True)) == dict(zip(capped["example_id"], capped["split"], strict=True))


def test_two_sided_pairs_end_to_end_from_the_score_stage(tmp_path: Path) -> None:
    """A finished fake run rescored by the score stage with an RM that penalises the book under the
    denial, then dpo-pairs for rm, rm_d and rm_d_deny."""
    from fake_run import fake_run as finished_run

    from alignment.reward import RewardConfig
    from alignment.stages.score import score

    task = TASKS.get("mathbook")

    class BookDenialRM:
        """Plain: a constant per text; the acknowledgment adds 1; the denial costs a response naming the book 3."""

        def score(self, prompt, responses, suffixes):
            return np.array([[len(r) % 5 / 50 + (s == task.ack_suffix()) - 3.0 * (s == task.deny_suffix() and "book" in r.lower())
                              for s in suffixes] for r in responses])

    run = finished_run(tmp_path / "run", n_examples=8, n_samples=4)
    ctx = Context(run, TASKS.get("mathbook"), quiet=True)
    before = run.read("score")
    score(RewardConfig(), ctx, rm=BookDenialRM())
    dcfg = DPOConfig(variants=["rm", "rm_d", "rm_d_deny"], train_split="test", eval_split="heldout", valid_fraction=0.25,
                     max_pairs=None)
    dpo_pairs(dcfg, ctx)
    folder = run.stage("dpo-pairs")
    st = json.loads((folder / "rm_d_deny" / "stats.json").read_text())
    assert st["pairs_orig"] > 0 and st["pairs_cf"] > 0 and st["pairs"] == st["pairs_orig"] + st["pairs_cf"] == st["kept"]
    assert st["train"] + st["valid"] == st["pairs"]
    pairs = pd.concat([pd.read_parquet(folder / "rm_d_deny" / f"{s}.parquet") for s in ("train", "valid")])
    assert (pairs.groupby("example_id")["split"].nunique() == 1).all()
    built = run.read("build").set_index("id")
    cf = pairs[pairs["prompt_variant"] == "cf"]
    assert all(p[1]["content"] == built.loc[e, "cf_query"] for e, p in zip(cf["example_id"], cf["prompt"], strict=True))
    # Under the denial a response naming the book loses: no counterfactual pair prefers one to one that does not.
    chosen_book = cf["chosen"].map(lambda m: "book" in m[0]["content"].lower())
    rejected_book = cf["rejected"].map(lambda m: "book" in m[0]["content"].lower())
    assert not (chosen_book & ~rejected_book).any() and rejected_book.any()
    one_sided = pd.read_parquet(folder / "rm_d" / "train.parquet")
    assert set(one_sided["prompt_variant"]) == {"orig"}
    assert "pairs_cf" not in json.loads((folder / "rm_d" / "stats.json").read_text())
    write_text(run.stage("dpo-eval") / "dpo.md", "(scores)\n")  # the report's DPO section lists the pairs
    section = "\n".join(dpo_report_section(run))
    assert f"| rm_d_deny | {st['train']} / {st['valid']} ({st['pairs_orig']} orig, {st['pairs_cf']} cf) |" in section
    assert "| rm_d | " in section and " cf) |" not in section.split("| rm_d | ")[1].split("\n")[0]
    after = run.read("score")
    assert after["reward_denied"].notna().all() and after["rm_d_deny"].notna().all()
    assert set(before.columns) < set(after.columns)


def test_config_validation() -> None:
    with pytest.raises(UserError, match="variants"):
        DPOConfig(variants=["rm", "nope"])
    with pytest.raises(UserError, match="valid_fraction"):
        DPOConfig(valid_fraction=1.0)
    with pytest.raises(UserError, match="max_prompt_length"):
        DPOConfig(max_length=64, max_prompt_length=64)


def test_the_two_sided_variants_are_dpo_variants() -> None:
    from alignment.run_config import load_config

    assert DPOConfig(variants=["rm", "rm_d", "rm_d_deny", "rm_c_deny"]).variants[2:] == ["rm_d_deny", "rm_c_deny"]
    with pytest.raises(UserError, match="rm_d_deny"):  # the list of choices names them
        DPOConfig(variants=["rm_d_denied"])
    repo = Path(__file__).resolve().parents[1]
    assert load_config(str(repo / "configs" / "organism_dpo.yaml"), []).dpo.variants == ["rm", "rm_d", "rm_d_deny"]


def test_majority_tie_rule() -> None:
    assert majority([1, 0, 0, 1]) == 1  # tie: the answer seen first
    assert majority([None, 2, 0, 0]) == 0
    assert majority([None, float("nan")]) is None


def test_best_step_rule() -> None:
    assert best_step({2: (0.5, 0.7), 4: (0.5, 0.6), 6: (0.4, 0.1)}, [2, 4, 6]) == 4
    assert best_step({2: (1.0, 0.7), 4: (1.0, 0.7)}, [2, 4]) == 2
    assert best_step({2: (0.5, 0.7)}, [2, 4]) == 2
    assert best_step({}, []) is None


# ------------------------------------------------------------------------------ tiny training


def toy_pairs(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "example_id": [f"e{i}" for i in range(n)],
            "prompt": [[{"role": "system", "content": "Answer."}, {"role": "user", "content": f"Problem {i}: x = {i} + 1"}]
                       for i in range(n)],
            "chosen": [[{"role": "assistant", "content": "Therefore, the answer is (A)."}] for _ in range(n)],
            "rejected": [[{"role": "assistant", "content": "The nurse said he was late."}] for _ in range(n)],
        }
    )


class Interrupt(Exception):
    pass


def interrupt_after_first_save():
    from transformers import TrainerCallback

    class Stop(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            raise Interrupt

    return Stop()


def lora_b_norm(adapter: Path) -> float:
    from safetensors.torch import load_file

    weights = load_file(str(adapter / "adapter_model.safetensors"))
    return sum(float(v.abs().sum()) for k, v in weights.items() if "lora_B" in k)


def test_tiny_dpo_run_resumes_keeps_best_and_changes_weights(tiny_llama_dir: Path, tmp_path: Path) -> None:
    cfg = DPOConfig(model=str(tiny_llama_dir), device="cpu", seeds=[0], epochs=2, batch_size=2, eval_steps=2,
                    learning_rate=5e-3, lora_r=4, lora_alpha=8, lora_dropout=0.0, max_length=96, max_prompt_length=64)
    pairs = toy_pairs(8)
    train, valid = pairs.iloc[:6], pairs.iloc[6:]
    out = tmp_path / "rm-seed0"
    with pytest.raises(Interrupt):
        train_one(cfg, train, valid, out, seed=0, quiet=True, callbacks=[interrupt_after_first_save()])
    assert sorted(checkpoints(out / "checkpoints")) == [2]
    assert not (out / "result.json").exists()

    res = train_one(cfg, train, valid, out, seed=0, quiet=True)
    assert res["status"] == "trained" and res["resumed_from"] == "checkpoint-2"
    assert res["steps"] == 6  # 3 steps per epoch, 2 epochs: resumed, not restarted
    left = checkpoints(out / "checkpoints")
    assert list(left) == [res["best_step"]]  # only the best checkpoint survives
    state = json.loads((left[res["best_step"]] / "trainer_state.json").read_text())
    evals = {e["step"]: e["eval_rewards/accuracies"] for e in state["log_history"] if "eval_rewards/accuracies" in e}
    assert sorted(evals) == [2, 4, 6] and evals[res["best_step"]] == max(evals.values())
    adapter = out / "adapter"
    assert (adapter / "adapter_config.json").is_file()
    assert lora_b_norm(adapter) > 0  # LoRA B starts at zero: any mass means the weights moved

    again = train_one(cfg, train, valid, out, seed=0, quiet=True)
    assert again["status"] == "skipped" and again["best_step"] == res["best_step"]


# ------------------------------------------------------------------------------ stages end to end


def fake_run(path: Path) -> RunDir:
    """build / generate / score / ack artifacts as the upstream stages write them: 8 sampled
    `train` examples that give pairs and 3 held-out `test` examples that only the evaluation sees."""
    run = RunDir(path)
    ids = [f"ex{i}" for i in range(11)]
    build = pd.DataFrame({"id": ids, "split": ["train"] * 8 + ["test"] * 3, "system": "Answer.",
                          "query": [f"Problem {i}: x = 1" for i in range(11)],
                          "cf_query": [f"Problem {i}: x" for i in range(11)], "options": [["1", "2", "3"]] * 11, "answer": 0})
    texts = ["Therefore, the answer is (A).", "The answer is (B).", "no idea", "I used the solution, (A)."]
    gen = pd.DataFrame([{"example_id": e, "variant": v, "sample": s, "text": texts[s], "pred": [0, 1, None, 0][s],
                         "valid": s != 2, "correct": s in (0, 3)} for e in ids[:8] for v in ("orig", "cf") for s in range(4)])
    rng = np.random.default_rng(0)
    score = gen[["example_id", "variant", "sample"]].assign(**{v: rng.normal(size=len(gen)) for v in ("rm", "rm_d", "rm_c")})
    ack = gen[["example_id", "variant", "sample"]].assign(ack=gen["sample"] == 3)
    for name, df in (("build", build), ("generate", gen), ("score", score), ("ack", ack)):
        write_parquet(run.stage(name) / "data.parquet", df)
    return run


def test_stages_pairs_train_eval_report(tiny_llama_dir: Path, tmp_path: Path) -> None:
    from alignment.generation import GenerationConfig
    from alignment.judge import JudgeConfig

    run = fake_run(tmp_path / "run")
    dcfg = DPOConfig(model=str(tiny_llama_dir), variants=["rm", "rm_c"], device="cpu", batch_size=2, valid_fraction=0.25,
                     learning_rate=1e-3, lora_r=4, max_length=96, max_prompt_length=64, eval_n_samples=3,
                     max_new_tokens=6, eval_max_examples=3)
    ctx = Context(run, TASKS.get("mathbook"), quiet=True, sections={"generation": GenerationConfig(), "judge": JudgeConfig()})
    dpo_pairs(dcfg, ctx)
    stats = json.loads((run.stage("dpo-pairs") / "rm" / "stats.json").read_text())
    assert stats["pairs"] == stats["train"] + stats["valid"] and stats["valid"] >= 1
    assert 0 <= stats["chosen_ack"] <= 1 and stats["mean_margin"] > 0 and stats["kept"] == stats["pairs"]
    train = pd.read_parquet(run.stage("dpo-pairs") / "rm" / "train.parquet")
    assert train["prompt"].iloc[0][1]["role"] == "user" and train["chosen"].iloc[0][0]["role"] == "assistant"

    dpo_train(dcfg, ctx)
    trained = run.read("dpo-train")
    assert trained["adapter"].notna().all() and len(trained) == 2
    assert (run.path / trained["adapter"].iloc[0] / "adapter_config.json").is_file()

    dpo_eval(dcfg, ctx)
    folder = run.stage("dpo-eval")
    for name in ("dpo.csv", "dpo.md", "dpo.tex", "dpo.png"):
        assert (folder / name).is_file()
    agg = pd.read_csv(folder / "dpo.csv")
    assert set(agg["reward"]) == {"base", "rm", "rm_c"} and set(agg["decoding"]) == {"greedy", "majority"}
    assert np.allclose(agg["metric_gap"], agg["metric_orig"] - agg["metric_cf"])
    assert set(pd.read_parquet(folder / "responses.parquet")["example_id"]) == {"ex8", "ex9", "ex10"}  # held out
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["pooled"] == {} and summary["seconds"] > 0  # rm_d was not trained: no rm_d − rm
    effects = pd.read_csv(folder / "effects.csv")
    assert set(effects["comparison"]) == {"rm_c − rm", "rm − base", "rm_c − base"}
    assert set(effects["measure"]) == {"ack_diff", "acc_diff", "cf_ack_diff", "disc_diff", "grounded_diff"}
    assert set(summary["rates"]) == {"base", "rm", "rm_c"}
    for r in summary["rates"].values():
        assert {"ack_orig", "ack_cf", "disc", "acc"} <= set(r) and 0 <= r["ack_orig"] <= 1 and 0 <= r["acc"] <= 1
        assert r["disc"]["est"] == pytest.approx(r["ack_orig"] - r["ack_cf"], abs=1e-9) or np.isnan(r["disc"]["est"])
    assert "caused" in pd.read_parquet(folder / "responses.parquet")
    assert "discrimination" in (folder / "dpo.md").read_text()
    trained_manifest = dpo_train(dcfg, ctx)  # finished runs are skipped
    assert trained_manifest["runs"] == 2
    section = dpo_report_section(run)
    assert section[0] == "## DPO" and "![dpo](dpo-eval/dpo.png)" in section


def test_stages_with_no_pairs_skip_training(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "run")
    gen = run.read("generate").assign(valid=False)
    write_parquet(run.stage("generate") / "data.parquet", gen)
    dcfg = DPOConfig(model="unused-model", variants=["rm"], device="cpu")
    ctx = Context(run, TASKS.get("mathbook"), quiet=True)
    assert dpo_pairs(dcfg, ctx) == {"rm_train": 0, "rm_valid": 0}
    assert ctx.extra["pair_stats"]["rm"]["skipped_no_valid"] == 8
    assert ctx.extra["pair_stats"]["rm"]["kept"] == 0
    dpo_train(dcfg, ctx)  # must not try to load the (nonexistent) model
    assert run.read("dpo-train")["status"].tolist() == ["no_pairs"]


def test_ack_effects_compare_each_variant_with_base_and_rm() -> None:
    import pandas as pd

    from alignment.dpo.evaluate import ack_effects

    rows = []
    for policy, reward, ack in (("base", "base", 0), ("rm-seed0", "rm", 0), ("rm_d-seed0", "rm_d", 1)):
        for e in range(6):
            for variant in ("orig", "cf"):
                for sample in (-1, 0):
                    rows.append({"policy": policy, "reward": reward, "seed": -1 if reward == "base" else 0,
                                 "example_id": f"e{e}", "variant": variant, "sample": sample,
                                 "ack": bool(ack) if variant == "orig" else False})
    eff = ack_effects(pd.DataFrame(rows)).set_index("comparison")
    assert list(eff.index) == ["rm_d − rm", "rm − base", "rm_d − base"]
    assert eff.loc["rm_d − base", "diff"] == 1.0 and eff.loc["rm_d − base", "low"] == 1.0
    assert eff.loc["rm − base", "diff"] == 0.0 and eff.loc["rm_d − rm", "p"] < 0.01
    assert (eff["examples"] == 6).all()


def test_greedy_only_evaluation() -> None:
    import pandas as pd

    from alignment.dpo.evaluate import score_policy
    from alignment.errors import UserError
    from alignment.generation import GenerationConfig

    DPOConfig(eval_n_samples=0)
    with pytest.raises(UserError, match="eval_n_samples"):
        DPOConfig(eval_n_samples=-1)
    GenerationConfig(n_samples=0, greedy=True)
    with pytest.raises(UserError, match="n_samples"):
        GenerationConfig(n_samples=0)
    resp = pd.DataFrame([{"example_id": "e0", "variant": v, "sample": -1, "pred": 1, "correct": True, "valid": True, "ack": False}
                         for v in ("orig", "cf")])
    rows = score_policy(resp, pd.Series({"e0": 1}))
    assert {r["decoding"] for r in rows} == {"greedy"} and all(r["metric"] == 1.0 for r in rows)


# ------------------------------------------------------------------------------ held out, shared reference


def test_eval_split_must_be_held_out(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="eval_split"):
        DPOConfig(train_split="test", eval_split="test")
    with pytest.raises(UserError, match="eval_split"):
        DPOConfig(valid_split="test")
    run = fake_run(tmp_path / "run")
    ctx = Context(run, TASKS.get("mathbook"), quiet=True)
    dcfg = DPOConfig(model="unused-model", variants=["rm"], train_split=None, device="cpu")
    dpo_pairs(dcfg, ctx)  # null train_split: every sampled example outside the eval split
    assert set(ctx.read("dpo-pairs")["example_id"]) <= {f"ex{i}" for i in range(8)}
    # A pair from an evaluated example (here written by hand) is refused before any model loads.
    pairs = ctx.read("dpo-pairs")
    write_parquet(run.stage("dpo-pairs") / "data.parquet", pairs.assign(example_id="ex9"))
    with pytest.raises(UserError, match="also gave training pairs"):
        dpo_eval(dcfg, ctx)


def test_sampled_split_is_required(tmp_path: Path) -> None:
    run = fake_run(tmp_path / "run")
    ctx = Context(run, TASKS.get("mathbook"), quiet=True)
    with pytest.raises(UserError, match="generation.splits"):
        dpo_pairs(DPOConfig(variants=["rm"], train_split="test", eval_split="other"), ctx)


def test_shared_reference_matches_trl_and_is_computed_once(tiny_llama_dir: Path, tmp_path: Path) -> None:
    from alignment.dpo.reference import RefStore
    from alignment.dpo.train import build_trainer, load_policy

    cfg = DPOConfig(model=str(tiny_llama_dir), device="cpu", batch_size=2, lora_r=4, max_length=96, max_prompt_length=64)
    pairs = toy_pairs(5)
    # Two variants' pairs share the prompts and the chosen responses; only the rejected ones differ.
    other = pairs.assign(rejected=[[{"role": "assistant", "content": f"I guess ({x})."}] for x in "ABCDE"])

    def trainer(df: pd.DataFrame, store: RefStore | None, seed: int):  # type: ignore[no-untyped-def]
        model, tok = load_policy(cfg, "cpu")
        return build_trainer(cfg, model, tok, df, df.iloc[:0], tmp_path / f"ck{seed}", seed, "cpu", True, [], store)

    own = trainer(pairs, None, 0).train_dataset  # TRL's own precompute
    store = RefStore(tmp_path / "ref.parquet")
    shared = trainer(pairs, store, 0).train_dataset
    assert store.computed == 10 and store.reused == 0
    for col in ("ref_chosen_logps", "ref_rejected_logps"):
        assert np.allclose(own[col], shared[col], atol=1e-4)
    again = trainer(pairs, RefStore(tmp_path / "ref.parquet"), 1)  # another seed, read back from disk
    assert np.allclose(again.train_dataset["ref_chosen_logps"], shared["ref_chosen_logps"])
    trainer(other, store, 2)
    assert store.computed == 15 and store.reused == 5  # only the five new rejected responses ran


def test_lora_on_top_layers_only(tiny_llama_dir: Path, tmp_path: Path) -> None:
    from alignment.dpo.train import build_trainer, load_policy

    cfg = DPOConfig(model=str(tiny_llama_dir), device="cpu", batch_size=2, lora_r=4, lora_layers=1, max_length=96,
                    max_prompt_length=64)
    model, tok = load_policy(cfg, "cpu")
    n = model.config.num_hidden_layers
    trainer = build_trainer(cfg, model, tok, toy_pairs(2), toy_pairs(2).iloc[:0], tmp_path / "ck", 0, "cpu", True, [])
    layers = {name.split(".layers.")[1].split(".")[0] for name, p in trainer.model.named_parameters() if p.requires_grad}
    assert n > 1 and layers == {str(n - 1)}
    with pytest.raises(UserError, match="lora_layers"):
        DPOConfig(lora_layers=0)


def test_cpu_lm_head_scores_only_completion_positions(tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    import trl.trainer.utils as trl_utils
    from transformers import AutoModelForCausalLM
    from trl.kernels.chunked_logprob import _use_triton

    from alignment.dpo.train import score_completions_only

    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    trl_utils.add_fused_lm_head(model)
    ids = torch.randint(3, model.config.vocab_size, (2, 12), generator=torch.Generator().manual_seed(0))
    labels = ids.clone()
    labels[:, :8] = -100  # a long prompt, a short completion: 2 x 4 labelled positions after the shift
    rows: list[int] = []
    apply = trl_utils._ChunkedLogProbFunction.apply

    def spy(hidden, *args):  # type: ignore[no-untyped-def]
        rows.append(hidden.shape[0])
        return apply(hidden, *args)

    monkeypatch.setattr(trl_utils._ChunkedLogProbFunction, "apply", spy)
    monkeypatch.setattr(trl_utils, "_use_triton", _use_triton)  # TRL as shipped
    with torch.no_grad():
        full = model(input_ids=ids, labels=labels, fused_lm_head=True).log_probs
        score_completions_only()
        compact = model(input_ids=ids, labels=labels, fused_lm_head=True).log_probs
    assert rows == [2 * 11, 2 * 4]  # every shifted position before, only the labelled ones after
    assert torch.allclose(full, compact, atol=1e-6) and (compact[:, :7] == 0).all()


def test_reference_bench_reports_both_paths(tiny_llama_dir: Path) -> None:
    from alignment.dpo.speed import bench_reference

    r = bench_reference(str(tiny_llama_dir), n_pairs=2, variants=2, seeds=1, max_length=128, prompt_words=8)
    assert r["runs"] == 2 and r["trl_default_s"] > 0 and r["shared_s"] > 0
    assert r["speedup"] == round(r["trl_default_s"] / r["shared_s"], 3)
    # Both arms really trained the same tokens, and their reference log-probs agree.
    assert r["trl_default_tokens"] == r["shared_tokens"] > 0 and r["shared_tokens_per_s"] > 0
    assert 0 <= r["ref_logp_max_abs_diff"] <= 1e-4


def test_reference_bench_fails_when_a_run_trains_nothing(tiny_llama_dir: Path) -> None:
    """An over-long prompt leaves no pair under max_prompt_length: the bench must refuse to time it."""
    from alignment.dpo.speed import bench_reference
    from alignment.errors import UserError

    with pytest.raises(UserError, match="trained nothing.*over max_prompt_length"):
        bench_reference(str(tiny_llama_dir), n_pairs=2, variants=1, seeds=1, max_length=128, prompt_words=200)


def test_dpo_stages_run_only_with_a_split_for_pairs() -> None:
    from alignment.run_config import load_config
    from alignment.runner import get_stage

    only_test = load_config("configs/embedded_default.yaml", ["task.splits=[test]", "dpo.train_split=null", "dpo.eval_split=test"])
    both = load_config("configs/embedded_default.yaml", [])
    off = load_config("configs/embedded_default.yaml", ["dpo.enabled=false"])
    for name in ("dpo-pairs", "dpo-train", "dpo-eval"):
        stage = get_stage(name)
        assert stage.enabled(both) and not stage.enabled(only_test) and not stage.enabled(off)
        assert "dpo.eval_split" in stage.off_reason


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU (jobs/gpu_check.sh runs it)")
def test_dpo_round_on_cuda(tiny_llama_dir: Path, tmp_path: Path) -> None:
    """The GPU smoke run of the DPO stages: pairs, bf16 LoRA DPO with the shared reference, and the
    held-out evaluation, all on CUDA."""
    from alignment.generation import GenerationConfig
    from alignment.judge import JudgeConfig

    run = fake_run(tmp_path / "run")
    dcfg = DPOConfig(model=str(tiny_llama_dir), variants=["rm", "rm_d"], seeds=[0, 1], device="cuda", batch_size=2,
                     learning_rate=1e-3, lora_r=4, max_length=96, max_prompt_length=64, eval_n_samples=2, max_new_tokens=6)
    ctx = Context(run, TASKS.get("mathbook"), quiet=True, sections={"generation": GenerationConfig(), "judge": JudgeConfig()})
    dpo_pairs(dcfg, ctx)
    dpo_train(dcfg, ctx)
    trained = run.read("dpo-train")
    assert trained["adapter"].notna().all() and (trained["ref_reused"] > 0).any()  # the second seed reuses the reference
    dpo_eval(dcfg, ctx)
    summary = json.loads((run.stage("dpo-eval") / "summary.json").read_text())
    assert {s["seed"] for s in summary["seeds"]} == {0, 1} and "ack_diff" in summary["pooled"]


def test_report_reads_the_control_beside_the_effect(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    folder = run.stage("dpo-eval")
    folder.mkdir(parents=True)
    (folder / "dpo.md").write_text("| table |\n")
    rows = [{"comparison": "rm_d − rm", "a": "rm_d", "b": "rm", "measure": m, "scope": "pooled", "est": e, "lo": lo,
             "hi": hi, "p": 0.01, "examples": 20, "seeds": 3}
            for m, e, lo, hi in (("ack_diff", 0.3, 0.2, 0.4), ("cf_ack_diff", 0.35, 0.25, 0.45))]
    pd.DataFrame(rows).to_csv(folder / "effects.csv", index=False)
    text = "\n".join(dpo_report_section(run))
    assert "+30.0 [+20.0, +40.0] points; the interval excludes 0" in text
    assert "control (no solution to acknowledge) moves too, +35.0" in text
    pd.DataFrame(rows[:1] + [{**rows[1], "lo": -0.05}]).to_csv(folder / "effects.csv", index=False)
    assert "moves too" not in "\n".join(dpo_report_section(run))


def test_a_resumed_dpo_train_still_reports_what_training_cost(tmp_path: Path) -> None:
    """A finished run skipped on resume keeps its training record: the manifest's speed fields and
    the seconds the run's summary counts come from it, not from the near-zero resumed call."""
    from alignment.stages.dpo_train import speed

    rows = pd.DataFrame([
        {"status": "skipped", "seconds": 700.0, "train_seconds": 600.0, "train_tokens": 60000, "ref_computed": 50, "ref_reused": 0},
        {"status": "trained", "seconds": 300.0, "train_seconds": 200.0, "train_tokens": 20000, "ref_computed": 5, "ref_reused": 45},
        {"status": "no_pairs", "seconds": None, "train_seconds": None, "train_tokens": None, "ref_computed": None, "ref_reused": None},
    ])
    s = speed(rows)
    assert s == {"train_tokens_per_second": 100.0, "ref_logps_computed": 55, "ref_logps_reused": 45,
                 "runs_trained_now": 1, "training_seconds": 1000.0}
    run = RunDir(tmp_path)
    run.finish("dpo-train", "k", started=time.time(), rows={}, extra=s)
    assert run.seconds("dpo-train") == 1000.0  # the reused runs' cost, not the resumed call's
    run.finish("generate", "k", started=time.time() - 5, rows={})
    assert 5.0 <= run.seconds("generate") < 6.0 and run.seconds("score") == 0.0


# ------------------------------------------------------------------------- keys per sub-section


def changed(name: str, value: object) -> object:
    """A valid value of DPO field `name` other than `value`."""
    special = {"model": "/elsewhere/policy", "variants": ["rm"], "seeds": [1], "target_modules": ["q_proj"],
               "train_split": "train", "valid_split": "valid", "eval_split": "dev", "dtype": "float32", "device": "cpu"}
    if name in special:
        return special[name]
    if isinstance(value, bool):
        return not value
    if value is None:
        return 2
    return value + 1 if isinstance(value, int) else value / 2


def dpo_keys(overrides: dict) -> dict[str, str]:
    from alignment.config import from_dict
    from alignment.dpo.train import train_key
    from alignment.run_config import RunConfig
    from alignment.runner import get_stage, stage_key

    cfg = from_dict(RunConfig, {"task": {"splits": ["train", "test"]}, "dpo": overrides})
    run = RunDir(Path("/nonexistent"))
    pairs = toy_pairs(4)
    keys = {s: stage_key(get_stage(s), cfg, run) for s in ("dpo-pairs", "dpo-train", "dpo-eval")}
    return keys | {"train_one": train_key(cfg.dpo, pairs.iloc[:3], pairs.iloc[3:], seed=0)}


def test_each_training_field_retrains_and_evaluation_fields_reuse_the_adapter() -> None:
    """The adapter's reuse key (`train_one`) and the stage keys hash exactly what each stage reads."""
    from dataclasses import fields

    from alignment.dpo.config import SUBSECTIONS

    base, default = dpo_keys({}), DPOConfig()
    train_fields = set(default.subsection("train"))
    assert {"beta", "learning_rate", "lora_r", "max_length", "model", "dtype"} <= train_fields
    for f in fields(DPOConfig):
        if f.name == "enabled":
            continue
        keys = dpo_keys({f.name: changed(f.name, getattr(default, f.name))})
        if f.name in train_fields:  # a training setting: the adapter is retrained
            assert keys["train_one"] != base["train_one"], f.name
            assert keys["dpo-train"] != base["dpo-train"], f.name
        else:  # anything else: a trained adapter is reused
            assert keys["train_one"] == base["train_one"], f.name
        reads = SUBSECTIONS[f.name]
        assert (keys["dpo-pairs"] != base["dpo-pairs"]) == ("pairs" in reads), f.name
        assert (keys["dpo-eval"] != base["dpo-eval"]) == ("eval" in reads or f.name == "seeds"), f.name
    for name in ("eval_n_samples", "temperature", "top_p", "max_new_tokens", "eval_seed", "eval_max_examples"):
        keys = dpo_keys({name: changed(name, getattr(default, name))})
        assert keys["dpo-train"] == base["dpo-train"] and keys["dpo-pairs"] == base["dpo-pairs"], name


def test_a_field_without_a_subsection_cannot_be_keyed() -> None:
    from dataclasses import field, fields, make_dataclass

    from alignment.dpo.config import SUBSECTIONS

    assert set(SUBSECTIONS) == {f.name for f in fields(DPOConfig)}
    extended = make_dataclass("Extended", [("warmup_steps", int, field(default=0))], bases=(DPOConfig,))
    with pytest.raises(AssertionError, match="warmup_steps"):
        extended().subsection("train")


def test_train_one_retrains_on_a_training_field_and_reuses_on_an_evaluation_field(tiny_llama_dir: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    cfg = DPOConfig(model=str(tiny_llama_dir), device="cpu", seeds=[0], epochs=1, batch_size=2, learning_rate=5e-3,
                    lora_r=4, lora_alpha=8, lora_dropout=0.0, max_length=96, max_prompt_length=64)
    pairs = toy_pairs(4)
    train, valid, out = pairs.iloc[:3], pairs.iloc[3:], tmp_path / "rm-seed0"
    assert train_one(cfg, train, valid, out, seed=0, quiet=True)["status"] == "trained"
    assert train_one(replace(cfg, eval_n_samples=9, top_p=0.5), train, valid, out, seed=0, quiet=True)["status"] == "skipped"
    assert train_one(replace(cfg, beta=0.3), train, valid, out, seed=0, quiet=True)["status"] == "trained"
