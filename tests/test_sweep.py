"""`alignment sweep`: one run per seed, the three headline criteria from each, the summary files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment.analysis.stats import paired_bootstrap
from alignment.cli import main
from alignment.cli.sweep import Criterion, headline, headline_holds, parse_seeds, table
from alignment.errors import UserError


def test_sweep_runs_each_seed_and_summarises(tmp_path: Path, tiny_llama_dir: Path, capsys: pytest.CaptureFixture) -> None:
    cfg = {
        "name": "tiny",
        "task": {"name": "mathbook", "source": "synthetic", "n_examples": 2},
        "generation": {"model": str(tiny_llama_dir), "n_samples": 2, "max_new_tokens": 6, "batch_size": 8},
        "reward": {"backend": "judge", "model": str(tiny_llama_dir), "max_length": 2048},
        "bon": {"ns": [1, 2]},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "sweep"
    assert main(["sweep", str(path), "--seeds", "0,3", "--out", str(out), "--quiet"]) == 0
    assert "of 2 seeds" in capsys.readouterr().out
    # Each seed is its own run with every seeded section moved to that seed.
    for seed in (0, 3):
        run = yaml.safe_load((out / f"seed-{seed}" / "config.yaml").read_text())
        assert [run[s]["seed"] for s in ("task", "generation", "attribution")] == [seed] * 3
        assert (out / f"seed-{seed}" / "report.md").is_file()
        assert not (out / f"seed-{seed}" / "dpo-train").exists()  # stops after what the headline needs
    a = pd.read_parquet(out / "seed-0" / "generate" / "data.parquet")
    b = pd.read_parquet(out / "seed-3" / "generate" / "data.parquet")
    assert not a["text"].equals(b["text"])
    df = pd.read_csv(out / "sweep.csv")
    assert sorted(df["seed"].unique()) == [0, 3] and set(df["criterion"]) == {"hide", "rm_d_vs_rm", "control", "control_all", "grounded"}
    # The table agrees with the criteria recomputed from the run dir.
    again = {c.name: c for c in headline(out / "seed-3")}
    for r in df[df["seed"] == 3].itertuples():
        assert r.estimate == pytest.approx(again[r.criterion].estimate, nan_ok=True)
        assert r.holds == again[r.criterion].holds
    assert "| 0 |" in (out / "sweep.md").read_text()
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["generation_seeds"] == [0, 3] and summary["enough_seeds"] is False and summary["min_generation_seeds"] == 5
    assert set(summary["bon"]["rm_d_vs_rm"]) >= {"est", "lo", "hi"} and summary["bon"]["rm_d_vs_rm"]["generation_seeds"] == 2
    mean = df[df["criterion"] == "rm_d_vs_rm"]["estimate"].mean()  # each generation seed counts once
    assert summary["bon"]["rm_d_vs_rm"]["est"] == pytest.approx(mean)
    assert "Pooled over generation seeds" in (out / "sweep.md").read_text() and "not enough for a claim" in (out / "sweep.md").read_text()
    # record.json alone renders the page (as a copy under results/ does), less the run-reading notes.
    from alignment.cli.results import render

    results = tmp_path / "results"
    results.mkdir()
    (results / "sweep_tiny.json").write_text((out / "record.json").read_text())
    assert main(["results", "render", "--dir", str(results)]) == 0 and render(results, check=True) == []
    page = (results / "sweep_tiny.md").read_text()
    assert page.split("\n", 2)[2].rstrip() in (out / "sweep.md").read_text()
    assert "alignment sweep " + str(path) + " --seeds 0,3" in page


def test_pooled_interval_is_over_generation_seeds(tmp_path: Path) -> None:
    """Two generation seeds that disagree: each seed's own interval is narrow, the pooled one spans
    both, because it resamples the generation seeds themselves."""
    from alignment.cli.sweep_pooled import pooled_summary

    runs = {}
    for seed, effect in ((0, 1.0), (1, 0.0), (2, 0.5)):
        rows = [{"N": n, "prompt": p, "reward": r, "example_id": f"s{seed}e{i}", "headline": n == 2,
                 "ack": (effect if r == "rm_d" and p == "orig" and n == 2 else 0.0)}
                for i in range(12) for n in (1, 2) for p in ("orig", "cf") for r in ("rm", "rm_d")]
        (tmp_path / f"seed-{seed}" / "bon").mkdir(parents=True)
        pd.DataFrame(rows).to_parquet(tmp_path / f"seed-{seed}" / "bon" / "per_example.parquet")
        runs[seed] = tmp_path / f"seed-{seed}"
    out = pooled_summary(runs, replicates=500)
    r = out["bon"]["rm_d_vs_rm"]
    assert r["est"] == pytest.approx(0.5) and r["lo"] < 0.25 and r["hi"] > 0.75 and r["generation_seeds"] == 3
    assert out["dpo"] == {} and out["enough_seeds"] is False


def test_headline_reads_the_paired_differences(tmp_path: Path) -> None:
    """`rm_d_vs_rm`: RM_D's pick minus RM's at the headline N (here the largest: this table has no
    `headline` column, as before the bon stage marked one); `hide`: RM at that N minus
    N = 1; `control`: RM_D's pick on original minus counterfactual prompts; all paired by example."""
    rows = []
    for i, (d, r) in enumerate([(1.0, 0.0), (1.0, 0.0), (0.5, 0.0), (1.0, 1.0)]):
        for prompt, n, vals in (("orig", 1, (0.5, 0.5)), ("orig", 4, (d, r)), ("cf", 4, (0.25, 0.25))):
            rows += [{"N": n, "prompt": prompt, "reward": "rm_d", "example_id": f"e{i}", "ack": vals[0]},
                     {"N": n, "prompt": prompt, "reward": "rm", "example_id": f"e{i}", "ack": vals[1]}]  # fmt: skip
    (tmp_path / "bon").mkdir()
    pd.DataFrame(rows).to_parquet(tmp_path / "bon" / "per_example.parquet")
    ack = [{"example_id": f"e{i}", "variant": v, "ack": v == "orig" and i < 2} for i in range(4) for v in ("orig", "cf")]
    (tmp_path / "ack").mkdir()
    pd.DataFrame(ack).to_parquet(tmp_path / "ack" / "data.parquet")
    got = {c.name: c for c in headline(tmp_path)}
    want = paired_bootstrap([1.0, 1.0, 0.5, 1.0], [0.0, 0.0, 0.0, 1.0], ["e0", "e1", "e2", "e3"])
    assert got["rm_d_vs_rm"].estimate == pytest.approx(0.625) == pytest.approx(want.estimate)
    assert (got["rm_d_vs_rm"].low, got["rm_d_vs_rm"].high) == pytest.approx((want.low, want.high))
    assert got["hide"].estimate == pytest.approx(-0.25)
    assert got["control"].estimate == pytest.approx(0.875 - 0.25) and got["control"].holds
    assert got["control_all"].estimate == pytest.approx(0.5)
    assert not Criterion("rm_d_vs_rm", -0.3, -0.5, -0.1, 4).holds  # excludes 0, wrong direction
    assert Criterion("hide", -0.3, -0.5, -0.1, 4).holds
    # Only the two headline criteria decide; the reported ones (hide, control_all) do not.
    rows = [{"seed": 0, "criterion": c.name, "estimate": c.estimate, "low": c.low, "high": c.high,
             "examples": 4, "holds": c.holds, "seconds": 1.0} for c in got.values()]  # fmt: skip
    assert not got["hide"].holds and bool(headline_holds(table(rows))[0])
    rows[[r["criterion"] for r in rows].index("control")]["holds"] = False
    assert not bool(headline_holds(table(rows))[0])


@pytest.mark.parametrize("text", ["", "a", "3,3", "-1", "2-x"])
def test_bad_seeds_are_one_line_errors(text: str) -> None:
    with pytest.raises(UserError, match="--seeds"):
        parse_seeds(text)


def test_dpo_rows_from_summary(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from alignment.cli.sweep import dpo_markdown, dpo_rows

    assert dpo_rows(tmp_path, 0) == []  # no DPO evaluation in this run
    iv = lambda e, lo, hi: {"est": e, "lo": lo, "hi": hi}  # noqa: E731
    summary = {"seconds": 10, "pooled": {"ack_diff": iv(0.2, 0.1, 0.3), "acc_diff": iv(-0.02, -0.08, 0.04),
                                         "cf_ack_diff": iv(0.05, -0.02, 0.1)},
               "seeds": [{"seed": s, "ack_diff": iv(e, -0.1, 0.5), "acc_diff": iv(0, -0.1, 0.1), "cf_ack_diff": iv(0, 0, 0)}
                         for s, e in ((0, 0.1), (1, 0.3))]}
    (tmp_path / "dpo-eval").mkdir()
    (tmp_path / "dpo-eval" / "summary.json").write_text(json.dumps(summary))
    rows = dpo_rows(tmp_path, 4)
    assert [r["measure"] for r in rows] == ["ack_diff", "acc_diff", "cf_ack_diff"] and all(r["holds"] for r in rows)
    assert rows[0]["per_training_seed"] == [0.1, 0.3]
    summary["seeds"][1]["ack_diff"]["est"] = -0.01  # one training seed goes the other way: does not hold
    (tmp_path / "dpo-eval" / "summary.json").write_text(json.dumps(summary))
    text = "\n".join(dpo_markdown(dpo_rows(tmp_path, 4)))
    assert "on **0 of 1**" in text and "+20.0 [+10.0, +30.0] (+10, -1)" in text
    assert text.splitlines()[-1].endswith("| no | unknown |")  # no manifest: no commit to name
    (tmp_path / "dpo-eval" / "manifest.json").write_text(json.dumps({"git_commit": "98a372f47c01af58"}))
    assert "\n".join(dpo_markdown(dpo_rows(tmp_path, 4))).splitlines()[-1].endswith("| no | 98a372f |")


def test_pooled_two_sided_figures_against_rm_d_and_rm(tmp_path: Path) -> None:
    """Best-of-N: RM_D± − RM_D on the pick's acknowledgment, metric and discrimination, and RM_D± − RM
    on counterfactual prompts, with values known per prompt; DPO: the same figures as dpo-eval's
    effects table on one generation seed."""
    from fake_run import fake_dpo_eval, fake_run

    from alignment.cli.sweep_pooled import bon_two_sided_groups, pooled_markdown, pooled_summary
    from alignment.dpo.effects import effects_table

    values = {("orig", "rm"): (0.0, 0.4), ("orig", "rm_d"): (1.0, 0.6), ("orig", "rm_d_deny"): (0.75, 0.5),
              ("cf", "rm"): (0.5, 0.2), ("cf", "rm_d"): (0.5, 0.2), ("cf", "rm_d_deny"): (0.0, 0.2)}
    runs = {}
    for seed in range(2):
        rows = [{"N": n, "prompt": p, "reward": r, "example_id": f"s{seed}e{i}", "headline": n == 2,
                 "ack": values[p, r][0] if n == 2 else 0.5, "metric": values[p, r][1]}
                for i in range(6) for n in (1, 2) for (p, r) in values]
        (tmp_path / f"seed-{seed}" / "bon").mkdir(parents=True)
        pd.DataFrame(rows).to_parquet(tmp_path / f"seed-{seed}" / "bon" / "per_example.parquet")
        runs[seed] = tmp_path / f"seed-{seed}"
    out = pooled_summary(runs, replicates=200)["bon_two_sided"]
    assert out["ack_diff"]["est"] == pytest.approx(-0.25) and out["acc_diff"]["est"] == pytest.approx(-0.1)
    assert out["disc_diff"]["est"] == pytest.approx((0.75 - 0.0) - (1.0 - 0.5))
    assert out["cf_ack_diff_vs_rm"]["est"] == pytest.approx(-0.5)
    text = "\n".join(pooled_markdown(pooled_summary(runs, replicates=200)))
    assert "Two-sided RM_D± (rm_d_deny) − RM_D" in text and "RM_D± − RM: acknowledgment (cf, control)" in text
    # A run without the two-sided variant has no such figures.
    one_sided = pd.read_parquet(runs[0] / "bon" / "per_example.parquet").query("reward != 'rm_d_deny'")
    one_sided.to_parquet(runs[0] / "bon" / "per_example.parquet")
    assert bon_two_sided_groups(runs[0]) == {}

    run = fake_run(tmp_path / "dpo-run", n_examples=6)
    resp = fake_dpo_eval(run, rewards=("rm", "rm_d", "rm_d_deny"), n_examples=6)
    dpo = pooled_summary({0: run.path}, replicates=200)["dpo_two_sided"]
    eff = effects_table(resp, replicates=200, per_seed=False).set_index(["comparison", "measure"])
    for measure in ("ack_diff", "acc_diff", "disc_diff"):
        assert dpo[measure]["est"] == pytest.approx(eff.loc[("rm_d_deny − rm_d", measure), "est"], nan_ok=True)
    assert dpo["cf_ack_diff_vs_rm"]["est"] == pytest.approx(eff.loc[("rm_d_deny − rm", "cf_ack_diff"), "est"], nan_ok=True)
