"""`alignment compare`: paired differences over shared examples, and one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from fake_run import fake_run

from alignment.cli import main
from alignment.compare import compare_runs, compare_tables, per_example_metrics
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
