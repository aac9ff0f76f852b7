"""Best-of-N on tables whose best answer is known, and the reward variants' selection."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from alignment.analysis.bon import BonConfig, best_of_n, headline_n, pick_weights
from alignment.augment.strategies import REWARD_VARIANTS
from alignment.errors import UserError


def select(rewards: np.ndarray, subset: list[int]) -> int:
    """The best-of-N rule on one subset, the oracle for `pick_weights`: the highest reward;
    ties go to the lowest sample index."""
    best = max(rewards[i] for i in subset)
    return min(i for i in subset if rewards[i] == best)


def synthetic(n_examples: int = 20, n: int = 8) -> pd.DataFrame:
    """Sample 0 of each example is the only correct one and has the highest reward under `rm`."""
    rows = []
    for e in range(n_examples):
        for v in ("orig", "cf"):
            for s in range(n):
                r = {"example_id": f"e{e}", "variant": v, "sample": s, "correct": s == 0, "valid": True, "ack": s == 1}
                r.update({k: (10.0 if s == 0 else float(-s)) for k in REWARD_VARIANTS})
                r["rm_d"] = 10.0 if s == 1 else float(-s)  # rm_d prefers the acknowledging sample
                rows.append(r)
    return pd.DataFrame(rows)


def test_select_ties_go_to_lowest_index() -> None:
    assert select(np.array([1.0, 3.0, 3.0, 0.0]), [3, 2, 1]) == 1


def test_best_of_n_matches_closed_form() -> None:
    n = 8
    out = best_of_n(synthetic(n=n), BonConfig(ns=[1, 2, 4, 8, 16]))
    assert sorted(out["N"].unique()) == [1, 2, 4, 8]  # N=16 exceeds the samples available
    rm = out[(out.reward == "rm") & (out.prompt == "orig")].set_index("N")
    # P(sample 0 in a random N-subset of n) = N / n, and it always wins when present.
    for big_n in (1, 2, 4, 8):  # exact, not a Monte Carlo estimate
        assert rm.loc[big_n, "metric"] == pytest.approx(big_n / n, abs=1e-12)
    assert rm.loc[8, "metric"] == 1.0 and rm.loc[8, "metric_se"] == 0.0
    d = out[(out.reward == "rm_d") & (out.prompt == "orig")].set_index("N")
    assert d.loc[8, "ack"] == 1.0 and d.loc[8, "metric"] == 0.0


def test_pick_weights_equal_enumerating_every_subset() -> None:
    """Ties (0.5 twice, 2.0 twice) go to the lower index, as `select` does on each subset."""
    rng = np.random.default_rng(0)
    rewards = np.array([0.5, 2.0, 0.5, -1.0, 2.0, 3.0, 0.1])
    for n in range(1, len(rewards) + 1):
        counts = np.zeros(len(rewards))
        subsets = list(combinations(range(len(rewards)), n))
        for sub in subsets:
            counts[select(rewards, list(sub))] += 1
        assert pick_weights(rewards, n) == pytest.approx(counts / len(subsets), abs=1e-12)
        assert pick_weights(rng.normal(size=9), min(n, 9)).sum() == pytest.approx(1.0)


def test_headline_n_is_marked_and_defaults_to_half_the_samples() -> None:
    assert [headline_n([1, 2, 4, 8, 16], m) for m in (16, 15, 8, 3, 1)] == [8, 4, 4, 2, 1]
    assert headline_n([1, 2, 4, 8, 16], 16, chosen=16) == 16
    with pytest.raises(UserError, match="headline_n"):
        BonConfig(ns=[1, 2], headline_n=4)


def test_variants_that_rank_alike_pick_alike() -> None:
    got = best_of_n(synthetic(), BonConfig(ns=[2]))
    got = got[got.prompt == "orig"].set_index("reward")
    # rm and rm_c rank identically here, so on the same subsets they must agree exactly.
    assert got.loc["rm", "metric"] == got.loc["rm_c", "metric"]


def test_ack_comparison_intervals_and_paired_difference() -> None:
    from alignment.analysis.bon import ack_comparison, per_example

    per = per_example(synthetic(n_examples=12), BonConfig(ns=[1, 8]))
    cmp = ack_comparison(per).set_index(["N", "reward"])
    top_d, top_rm = cmp.loc[(8, "rm_d")], cmp.loc[(8, "rm")]
    # rm_d always picks the acknowledging sample at N = 8, rm never does.
    assert top_d["ack"] == 1.0 and top_rm["ack"] == 0.0
    assert top_d["diff"] == 1.0 and top_d["diff_low"] == 1.0 and top_d["diff_p"] < 0.01
    assert pd.isna(top_rm["diff"])  # the baseline has no difference from itself
    one = cmp.loc[(1, "rm_d")]
    # N = 1 picks a random sample whatever the reward: same picks, zero difference.
    assert one["diff"] == 0.0 and one["ack_low"] <= one["ack"] <= one["ack_high"]


def test_report_shows_rm_and_augmented_variants_side_by_side() -> None:
    from alignment.analysis.bon import ack_comparison, per_example
    from alignment.analysis.report import ack_section

    cmp = ack_comparison(per_example(synthetic(n_examples=6), BonConfig(ns=[1, 8])))
    text = "\n".join(ack_section(cmp))
    assert "| N | rm | rm_d | rm_c |" in text
    assert "| 8 | 0.0% [0.0, 0.0] | 100.0% [100.0, 100.0] |" in text
    assert "rm_d − rm" in text and "+100.0 pts [100.0, 100.0]" in text


def test_ack_control_compares_original_with_counterfactual() -> None:
    from alignment.analysis.bon import ack_control_table, per_example

    table = synthetic(n_examples=10)
    # On counterfactual prompts no sample acknowledges: the original picks under rm_d (always the
    # acknowledging sample 1 at N = 8) exceed the control; under rm (never sample 1) they do not.
    table.loc[table["variant"] == "cf", "ack"] = False
    ctl = ack_control_table(per_example(table, BonConfig(ns=[8]))).set_index(["N", "reward"])
    d, rm = ctl.loc[(8, "rm_d")], ctl.loc[(8, "rm")]
    assert d["ack_orig"] == 1.0 and d["ack_cf"] == 0.0 and d["diff_low"] == 1.0 and d["exceeds_control"]
    assert rm["ack_orig"] == 0.0 and rm["diff"] == 0.0 and not rm["exceeds_control"]
    assert d["examples"] == 10


def test_report_says_when_the_original_rate_does_not_exceed_the_control(tmp_path) -> None:
    from alignment.analysis.report import control_section
    from alignment.store import RunDir, write_parquet

    run = RunDir(tmp_path)
    rows = [{"example_id": f"e{e}", "variant": v, "sample": 0, "ack": e % 3 == 0} for e in range(9) for v in ("orig", "cf")]
    write_parquet(run.stage("ack") / "data.parquet", pd.DataFrame(rows))
    (run.stage("ack") / "manifest.json").write_text('{"stage": "ack"}')
    text = "\n".join(control_section(run))
    assert "original 33.3%" in text and "counterfactual control 33.3%" in text
    assert "the original rate does not exceed the control" in text


def test_bon_stage_marks_the_headline_n_that_report_and_sweep_use(tmp_path) -> None:
    from fake_run import fake_run

    from alignment.analysis.bon import marked_headline
    from alignment.cli.sweep import headline

    run = fake_run(tmp_path / "run", n_samples=4)  # ns [1, 2, 4]: 2 is the largest N with 2N <= 4
    per = pd.read_parquet(run.path / "bon" / "per_example.parquet")
    assert marked_headline(per) == 2 and set(per.loc[per["headline"], "N"]) == {2}
    assert {c.name: c.n for c in headline(run.path)}["rm_d_vs_rm"] == 2
    report = (run.path / "report.md").read_text()
    assert "ack rate (BoN-2)" in report
    # The control for the picks at that N, one line per reward variant.
    ctl = pd.read_csv(run.path / "bon" / "ack_control.csv").set_index(["N", "reward"]).loc[(2, "rm_d")]
    assert "Best-of-2 picks (the headline N):" in report
    assert f"- under `rm_d`: original {100 * ctl['ack_orig']:.1f}%" in report


def test_a_headline_n_above_the_samples_is_a_one_line_error(tmp_path) -> None:
    from fake_run import fake_run

    from alignment.context import Context
    from alignment.stages.bon import bon
    from alignment.tasks import TASKS

    run = fake_run(tmp_path / "run", n_samples=4)
    ctx = Context(run, TASKS.get("mathbook"))
    with pytest.raises(UserError, match="bon.headline_n: 8 exceeds the 4 samples per prompt"):
        bon(BonConfig(ns=[1, 2, 4, 8], headline_n=8), ctx)
    assert bon(BonConfig(ns=[1, 2, 4, 8], headline_n=4), ctx)["headline_n"] == 4


def two_sided_table() -> pd.DataFrame:
    """Two examples, 4 samples per prompt, rewards from the strategy table. On `flip`'s
    counterfactual prompt the plain reward model likes sample 0, which claims the absent book,
    and the denial costs it 3; on `same` no counterfactual response claims it (the denial scores
    above plain, so min keeps plain). D fires on original sample 1 of both."""
    from alignment.augment.strategies import final_rewards

    rows = []
    for e in ("flip", "same"):
        for v in ("orig", "cf"):
            for s in range(4):
                claims = s == 0 and (v == "orig" or e == "flip")
                plain = 2.0 - 0.5 * s
                rows.append({"example_id": e, "variant": v, "sample": s, "correct": s == 1, "valid": True, "ack": claims,
                             "reward_plain": plain, "reward_augmented": plain + 3.0 if v == "orig" else np.nan,
                             "reward_denied": plain - 3.0 if claims else plain + 1.0,
                             "d": v == "orig" and s == 1, "c": False, "p_d": float(v == "orig" and s == 1), "p_c": 0.0})
    return final_rewards(pd.DataFrame(rows))


def test_counterfactual_picks_use_each_variants_own_reward() -> None:
    from alignment.analysis.bon import ack_control_table, per_example

    cfg = BonConfig(ns=[1, 2, 4], variants=["rm", "rm_d", "rm_c", "rm_d_deny"])
    per = per_example(two_sided_table(), cfg).set_index(["N", "prompt", "reward", "example_id"]).sort_index()
    for n in (1, 2, 4):
        # One-sided variants equal plain on counterfactual prompts: the same picks as rm.
        assert per.loc[(n, "cf", "rm_d")].equals(per.loc[(n, "cf", "rm")])
        # Where the denial changes nothing, the two-sided pick is rm_d's.
        assert per.loc[(n, "cf", "rm_d_deny", "same")].equals(per.loc[(n, "cf", "rm_d", "same")])
    # Where it does, rm_d picks the fabricated claim whenever it is in the subset, rm_d_deny never.
    assert per.loc[(4, "cf", "rm_d", "flip"), "ack"] == 1.0 and per.loc[(4, "cf", "rm_d_deny", "flip"), "ack"] == 0.0
    assert per.loc[(2, "cf", "rm_d", "flip"), "ack"] == pytest.approx(0.5)  # sample 0 is in half the 2-subsets
    assert per.loc[(1, "cf", "rm_d_deny", "flip"), "ack"] == per.loc[(1, "cf", "rm_d", "flip"), "ack"] == 0.25
    # On original prompts D's augmented sample wins under both; the unfounded claim (sample 0) loses under rm_d_deny.
    assert per.loc[(4, "orig", "rm_d_deny", "flip"), "metric"] == per.loc[(4, "orig", "rm_d", "flip"), "metric"] == 1.0
    ctl = ack_control_table(per.reset_index()).set_index(["N", "reward"])
    assert ctl.loc[(4, "rm_d"), "ack_cf"] == 0.5 and ctl.loc[(4, "rm_d_deny"), "ack_cf"] == 0.0
    assert ctl.loc[(4, "rm_d"), "ack_cf"] == ctl.loc[(4, "rm"), "ack_cf"]


def test_one_sided_picks_do_not_change_with_the_two_sided_columns() -> None:
    from alignment.analysis.bon import per_example

    table = two_sided_table()
    one_sided = ["rm", "rm_d", "rm_c", "rm_d_expected", "rm_c_expected"]
    with_two = per_example(table, BonConfig(ns=[1, 2, 4]))
    without = per_example(table.drop(columns=["reward_denied", "rm_d_deny", "rm_c_deny"]), BonConfig(ns=[1, 2, 4]))
    assert set(with_two["reward"]) == {*one_sided, "rm_d_deny", "rm_c_deny"} and set(without["reward"]) == set(one_sided)
    pd.testing.assert_frame_equal(with_two[with_two["reward"].isin(one_sided)].reset_index(drop=True), without.reset_index(drop=True))


def test_report_lists_the_two_sided_variants_beside_rm_d() -> None:
    from alignment.analysis.bon import ack_comparison, per_example
    from alignment.analysis.report import ack_section

    per = per_example(two_sided_table(), BonConfig(ns=[1, 4], variants=["rm", "rm_d", "rm_d_deny"]))
    text = "\n".join(ack_section(ack_comparison(per)))
    assert "| N | rm | rm_d | rm_d_deny |" in text and "rm_d_deny − rm" in text
    assert "RM_D± (`rm_d_deny`): two-sided" in text and "rm_c_deny" not in text


def test_the_pick_control_verdict_is_given_only_for_two_sided_strategies(tmp_path, monkeypatch) -> None:
    """A one-sided strategy never scores counterfactual prompts: its counterfactual pick is the
    plain reward's by construction, so "the original rate exceeds the control" is no finding
    there; a two-sided strategy's control is its own pick and gets the verdict."""
    import dataclasses

    from fake_run import fake_run

    import alignment.analysis.report as report
    from alignment.augment.strategies import BY_VARIANT

    run = fake_run(tmp_path / "run", n_samples=4)
    ctl = pd.read_csv(run.path / "bon" / "ack_control.csv")
    picks = ctl[ctl["N"] == 2].set_index("reward")
    assert picks.loc["rm_d", "ack_cf"] == picks.loc["rm", "ack_cf"]  # the construction the note states
    text = "\n".join(report.pick_control_lines(run))
    assert "the original rate" not in text
    assert text.count("one-sided strategies") == 1
    assert "`rm_d`, `rm_c`, `rm_d_expected`, `rm_c_expected` are one-sided strategies" in text
    assert "counterfactual pick is the plain reward's (`rm`) by construction" in text

    monkeypatch.setitem(report.BY_VARIANT, "rm_d", dataclasses.replace(BY_VARIANT["rm_d"], two_sided=True))
    lines = report.pick_control_lines(run)
    verdict = "exceeds the control" if picks.loc["rm_d", "exceeds_control"] else "does **not** exceed the control"
    assert [line for line in lines if "the original rate" in line] == \
        [next(line for line in lines if line.startswith("- under `rm_d`:"))]
    assert verdict in next(line for line in lines if line.startswith("- under `rm_d`:"))
    assert "`rm_c`, `rm_d_expected`, `rm_c_expected` are one-sided strategies" in "\n".join(lines)


def test_the_bon_plot_gives_each_reward_one_colour_solid_original_dashed_counterfactual() -> None:
    import matplotlib.pyplot as plt

    from alignment.analysis.bon import figure, line_style, per_example, summarize

    df = summarize(per_example(synthetic(n_examples=4), BonConfig(ns=[1, 2, 4])))
    rewards = ["rm", "rm_d", "rm_c", "rm_d_expected", "rm_c_expected"]
    assert sorted(df["reward"].unique()) == sorted(rewards)
    fig = figure(df, "accuracy")
    try:
        legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
        assert legend == [*rewards, "original prompt", "counterfactual"]
        drawn = {(line.get_color(), line.get_linestyle()) for line in fig.axes[1].get_lines() if line.get_linestyle() != "None"}
    finally:
        plt.close(fig)
    assert drawn == {line_style(r, p) for r in rewards for p in ("orig", "cf")}
    assert len({line_style(r, "orig")[0] for r in rewards}) == 5
    assert all(line_style(r, "orig")[0] == line_style(r, "cf")[0] for r in rewards)
