"""`.venv/bin/python -m pytest -q tests/test_reasonbench_baseline.py`: shipped surface baselines.

Majority and character TF-IDF, trained on the train split and scored on the locked split of a
small build, written as CSV and Markdown, and reachable as `alignment reasonbench baseline`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd
import pytest

from alignment.errors import UserError
from alignment.reasonbench.benchmark.build import BuildConfig, build
from alignment.reasonbench.experiments.baseline import evaluate, receipt_label, run_baseline


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rbb")
    build(BuildConfig(out, seed=3, scale=0.03, quiet=True, workers=1))
    return out


def test_majority_scores_the_locked_share_of_the_training_mode(small: Path) -> None:
    df = pd.read_parquet(small)
    table = evaluate(df, "majority").set_index("group")
    train = df[(df["split"] == "train") & df["control_type"].isna()]
    locked = df[(df["split"] == "locked") & df["control_type"].isna()]
    top = train["new_verdict"].value_counts().index[0]
    assert table.loc["overall", "verdict_acc"] == round(100 * (locked["new_verdict"] == top).mean(), 1)
    stable = (locked["receipt"].map(len) == 0).mean()
    assert table.loc["overall", "receipt_acc"] == round(100 * stable, 1)  # "none" is the mode
    assert table.loc["stable", "receipt_acc"] == 100.0 and table.loc["changed", "receipt_acc"] == 0
    assert {"control=inverse", "control=permutation", "control=distractor", "min_receipt_size=1",
            "stratum=logical", "ambiguous"} <= set(table.index)  # fmt: skip


def test_tfidf_writes_csv_and_markdown_and_beats_majority(small: Path) -> None:
    table = run_baseline(small, "tfidf").set_index("group")
    csv = pd.read_csv(small / "_baselines" / "tfidf.csv").set_index("group")
    assert csv.loc["overall", "verdict_acc"] == table.loc["overall", "verdict_acc"]
    assert "| overall |" in (small / "_baselines" / "tfidf.md").read_text()
    majority = evaluate(pd.read_parquet(small), "majority").set_index("group")
    assert table.loc["overall", "verdict_acc"] > majority.loc["overall", "verdict_acc"]
    pd.read_parquet(small)  # the outputs do not break reading DIR as a dataset


def test_receipt_label_and_bad_kind(small: Path) -> None:
    assert receipt_label(["G", "NA"]) == "G|NA" and receipt_label([]) == "none"
    with pytest.raises(UserError, match="--kind"):
        evaluate(pd.read_parquet(small), "bert")


def test_cli_baseline(small: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from alignment.cli.reasonbench import register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["reasonbench", "baseline", str(small), "--kind", "majority"])
    assert args.func(args) == 0
    assert "| overall |" in capsys.readouterr().out
    assert (small / "_baselines" / "majority.csv").exists()
