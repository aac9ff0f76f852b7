"""DPO policies' truthfulness (`alignment.dpo.truth`) and its place in dpo-eval's summary.json."""

from __future__ import annotations

import pandas as pd
import pytest

from alignment.dpo.effects import effects_table, summary
from alignment.dpo.truth import mark_caused, rates


def responses(seeds: tuple[int, ...] = (0, 1), examples: int = 8) -> pd.DataFrame:
    """base and rm answer truthfully (acknowledge exactly where the leak changed the answer); rm_d
    acknowledges on every prompt, the counterfactual ones too (a fabricating policy)."""
    rows = []
    for reward in ("base", "rm", "rm_d"):
        for seed in ((-1,) if reward == "base" else seeds):
            for e in range(examples):
                leak_used = e % 2 == 0
                for variant in ("orig", "cf"):
                    for sample in (-1, 0, 1):
                        pred = 1 if variant == "orig" and leak_used else 0
                        ack = reward == "rm_d" or (variant == "orig" and leak_used)
                        rows.append({"policy": f"{reward}-{seed}", "reward": reward, "seed": seed, "example_id": f"e{e}",
                                     "variant": variant, "sample": sample, "pred": pred, "correct": pred == 1, "ack": ack})
    resp = pd.DataFrame(rows)
    return resp.assign(caused=mark_caused(resp))


def test_caused_marks_follow_the_answer_change() -> None:
    resp = responses()
    orig = resp[resp["variant"] == "orig"]
    assert (orig["caused"] == (orig["example_id"].str[1:].astype(int) % 2 == 0)).all()
    assert not resp.loc[resp["variant"] == "cf", "caused"].any()


def test_summary_has_disc_and_grounded_differences_pooled_and_per_seed_and_rates() -> None:
    resp = responses()
    eff = effects_table(resp, replicates=200)
    s = summary(eff, 1.0, rates=rates(resp, replicates=200))
    for key in ("ack_diff", "acc_diff", "cf_ack_diff"):  # today's fields stay
        assert key in s["pooled"]
    # rm_d: discrimination 0 (acks everywhere), grounded 0; rm: discrimination 0.5, grounded 1.
    assert s["pooled"]["disc_diff"]["est"] == pytest.approx(-0.5)
    assert s["pooled"]["grounded_diff"]["est"] == pytest.approx(-1.0)
    assert set(s["pooled"]["disc_diff"]) == {"est", "lo", "hi"}
    assert [x["seed"] for x in s["seeds"]] == [0, 1]
    assert all(x["grounded_diff"]["est"] == pytest.approx(-1.0) for x in s["seeds"])
    r = s["rates"]
    assert list(r) == ["base", "rm", "rm_d"]
    assert (r["rm_d"]["ack_orig"], r["rm_d"]["ack_cf"], r["rm_d"]["disc"]["est"]) == (1.0, 1.0, 0.0)
    assert (r["rm"]["ack_orig"], r["rm"]["ack_cf"], r["rm"]["disc"]["est"], r["rm"]["acc"]) == (0.5, 0.0, 0.5, 0.5)
    assert (r["base"]["true_ack"], r["base"]["false_ack"], r["base"]["grounded"]["est"]) == (1.0, 0.0, 1.0)
    vs_base = eff[(eff["comparison"] == "rm_d − base") & (eff["measure"] == "disc_diff") & (eff["scope"] == "pooled")]
    assert vs_base["est"].iloc[0] == pytest.approx(-0.5)


def test_responses_without_caused_marks_give_no_grounded_rows() -> None:
    resp = responses().drop(columns="caused")
    eff = effects_table(resp, replicates=50)
    assert "disc_diff" in set(eff["measure"]) and "grounded_diff" not in set(eff["measure"])
