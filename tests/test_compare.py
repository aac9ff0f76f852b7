"""`alignment compare`: paired differences over shared examples, and one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from fake_run import fake_dpo_eval, fake_run

from alignment.cli import main
from alignment.cli.compare import compare_runs, compare_tables, per_example_metrics
from alignment.store import RunDir


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, RunDir]:
    root = tmp_path_factory.mktemp("compare")
    return fake_run(root / "a"), fake_run(root / "b", seed=1, skill=0.1, bonus=2.0)


def test_differences_are_paired_per_example_means(runs: tuple[RunDir, RunDir], tmp_path: Path) -> None:
    a, b = runs
    paths = compare_runs(a.path, b.path, tmp_path / "out")
    metrics = pd.read_csv(paths["csv"])
    assert {"metric (orig)", "ack rate (cf)", "D fired", "BoN-4 ack (orig, rm_d)"} <= set(metrics["metric"])

    def per_example(run: RunDir) -> pd.Series:
        g = run.read("generate")
        return g[g["variant"] == "orig"].groupby("example_id")["correct"].mean()

    row = metrics.set_index("metric").loc["metric (orig)"]
    assert row["diff"] == pytest.approx((per_example(a) - per_example(b)).mean())
    assert row["low"] <= row["diff"] <= row["high"]
    md, page = paths["md"].read_text(), paths["html"].read_text()
    assert "disagree most" in md and "disagree most" in page and "<table>" in page


def test_a_run_against_itself_differs_nowhere(runs: tuple[RunDir, RunDir]) -> None:
    m = per_example_metrics(runs[0].path)
    metrics, dis = compare_tables(m, m)
    assert (metrics["diff"] == 0).all() and dis.empty


def test_errors_are_one_line_exit_2(runs: tuple[RunDir, RunDir], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a, _ = runs
    other = RunDir(shutil.copytree(a.path, tmp_path / "other"))
    gen = other.read("generate")
    gen["example_id"] = "elsewhere-" + gen["example_id"]
    gen.to_parquet(other.stage("generate") / "data.parquet")
    empty = tmp_path / "empty"
    empty.mkdir()
    for b, message in ((other.path, "share no examples"), (empty, "missing artifact generate/data.parquet"),
                       (tmp_path / "nowhere", "run dir not found")):
        assert main(["compare", str(a.path), str(b), "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


@pytest.fixture(scope="module")
def dpo_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, RunDir]:
    root = tmp_path_factory.mktemp("compare-dpo")
    a, b = fake_run(root / "a"), fake_run(root / "b", seed=1, skill=0.1)
    fake_dpo_eval(a)
    fake_dpo_eval(b, seed=1, skill=0.2)
    return a, b


def test_every_dpo_eval_metric_is_paired(dpo_runs: tuple[RunDir, RunDir], tmp_path: Path) -> None:
    a, b = dpo_runs
    paths = compare_runs(a.path, b.path, tmp_path / "out")
    metrics = pd.read_csv(paths["csv"]).set_index("metric")
    md, page = paths["md"].read_text(), paths["html"].read_text()
    tables = {k: pd.read_csv(r.stage("dpo-eval") / "dpo.csv").set_index(["reward", "decoding"]) for k, r in (("A", a), ("B", b))}
    names = []
    for (reward, decoding), row in tables["A"].iterrows():
        for m in ("metric", "ack"):
            for part, name in (("orig", f"{m} (orig, {reward})"), ("cf", f"{m} (cf, {reward})"), ("gap", f"{m} gap orig − cf ({reward})")):
                names.append(f"DPO {decoding} {name}")
                got = metrics.loc[names[-1]]
                assert got["A"] == pytest.approx(row[f"{m}_{part}"]), names[-1]  # the stage's own number
                assert got["B"] == pytest.approx(tables["B"].loc[(reward, decoding), f"{m}_{part}"])
                assert got["diff"] == pytest.approx(got["A"] - got["B"]) and got["low"] <= got["diff"] <= got["high"]
                assert got["examples"] == 5
        names.append(f"DPO {decoding} valid (orig, {reward})")
    effects = pd.read_csv(a.stage("dpo-eval") / "ack_effects.csv")
    for comparison, diff in zip(effects["comparison"], effects["diff"], strict=True):
        names.append(f"DPO ack effect {comparison} (orig)")
        assert metrics.loc[names[-1], "A"] == pytest.approx(diff)
    assert len(effects) == 3 and set(names) <= set(metrics.index)
    for name in names:
        assert f"| {name} | 5 |" in md and f"<td>{name}</td>" in page


def test_dpo_metrics_without_per_example_values_say_why(dpo_runs: tuple[RunDir, RunDir], tmp_path: Path) -> None:
    a, b = dpo_runs
    b2 = RunDir(shutil.copytree(b.path, tmp_path / "b2"))
    (b2.stage("dpo-eval") / "responses.parquet").unlink()  # only per-seed scores left
    paths = compare_runs(a.path, b2.path, tmp_path / "out")
    metrics = pd.read_csv(paths["csv"]).set_index("metric")
    row = metrics.loc["DPO greedy metric (orig, rm_d)"]
    want = pd.read_csv(b.stage("dpo-eval") / "dpo.csv").set_index(["reward", "decoding"]).loc[("rm_d", "greedy"), "metric_orig"]
    assert row["B"] == pytest.approx(want) and pd.isna(row["low"]) and pd.isna(row["examples"])
    assert f"responses.parquet missing in B ({b2.path})" in row["note"]
    dpo = metrics[metrics.index.str.startswith("DPO")]
    assert len(dpo) == 3 * 2 * 8 + 3 and dpo["low"].isna().all()  # (reward, decoding) × 8 metrics, 3 effects
    md = paths["md"].read_text()
    assert "| DPO greedy metric (orig, rm_d) | n/a |" in md and "(no interval: no per-example values" in md
    assert "no per-example values" in paths["html"].read_text()
    assert not metrics.loc["metric (orig)", ["low", "high"]].isna().any()  # the other stages stay paired


def test_dpo_eval_in_one_run_only_is_noted(dpo_runs: tuple[RunDir, RunDir], runs: tuple[RunDir, RunDir], tmp_path: Path) -> None:
    paths = compare_runs(dpo_runs[0].path, runs[1].path, tmp_path / "out")
    metrics = pd.read_csv(paths["csv"])
    assert not metrics["metric"].str.startswith("DPO").any()
    assert f"DPO metrics not compared: only A ({dpo_runs[0].path}) has dpo-eval results." in paths["md"].read_text()
