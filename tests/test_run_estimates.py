"""A run's acknowledgment figures with the judge's error (`alignment.judge_error.run_estimates`):
`pytest -q tests/test_run_estimates.py`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fake_run import fake_run, label_sample

from alignment.analysis.bon import BonConfig, per_example
from alignment.context import Context
from alignment.judge_error.run_estimates import (
    coefficients,
    corrected_figures,
    load_judge_error,
    uncorrected_lines,
)
from alignment.judge_error.run_labels import check_labels
from alignment.stages.report import report
from alignment.store import RunDir
from alignment.tasks import TASKS


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    return fake_run(tmp_path_factory.mktemp("estimates") / "run", n_examples=8)


@pytest.fixture
def run(base: RunDir, tmp_path: Path) -> RunDir:
    return RunDir(shutil.copytree(base.path, tmp_path / "run"))


def _table(run: RunDir) -> pd.DataFrame:
    from alignment.judge_error.run_estimates import response_table

    return response_table(run)


def test_coefficients_reproduce_the_bon_stage(run: RunDir) -> None:
    """Judge-only, each figure is the number the bon and ack stages print."""
    table = _table(run)
    coef = coefficients(table, 2, ["rm", "rm_d"])
    ack = table["ack"].to_numpy(dtype=float)
    per = per_example(table.merge(run.read("generate")[["example_id", "variant", "sample", "correct", "valid"]]),
                      BonConfig(ns=[2], variants=["rm", "rm_d"]))
    for v in ("rm", "rm_d"):
        want = per[(per["prompt"] == "orig") & (per["reward"] == v)]["ack"].mean()
        assert coef[f"BoN-2 {v}"] @ ack == pytest.approx(want)
    assert coef["BoN-2 rm_d − rm"] @ ack == pytest.approx(coef["BoN-2 rm_d"] @ ack - coef["BoN-2 rm"] @ ack)
    orig = table["variant"] == "orig"
    assert coef["all responses, original prompts"] @ ack == pytest.approx(table.loc[orig, "ack"].mean())


def test_coefficients_of_a_two_sided_variant_use_its_own_counterfactual_picks(run: RunDir) -> None:
    """A two-sided reward differs from rm_d on counterfactual prompts too; its discrimination and its
    difference from rm_d reproduce what the bon stage's picks give."""
    table = _table(run)
    text = run.read("generate").set_index(["example_id", "variant", "sample"])["text"]
    book = np.asarray(table.set_index(["example_id", "variant", "sample"]).index.map(text).str.contains("book"), dtype=float)
    # As if the judge read the counterfactual claims of the book as acknowledgment (the keyword judge
    # reads this fake run's "I will not rely on it" as none), so that moved picks show in the rates.
    table["ack"] = table["ack"].astype(bool) | ((table["variant"] == "cf").to_numpy() & (book > 0))
    table["rm_d_deny"] = np.where(table["d"].fillna(False).astype(bool), table["rm_d"], table["rm_d"] - 3.0 * book)
    coef = coefficients(table, 2, ["rm", "rm_d", "rm_d_deny"])
    ack = table["ack"].to_numpy(dtype=float)
    per = per_example(table.merge(run.read("generate")[["example_id", "variant", "sample", "correct", "valid"]]),
                      BonConfig(ns=[2], variants=["rm", "rm_d", "rm_d_deny"]))
    mean = per.groupby(["reward", "prompt"])["ack"].mean()
    assert coef["BoN-2 rm_d_deny"] @ ack == pytest.approx(mean["rm_d_deny", "orig"])
    disc = coef["BoN-2 rm_d_deny original − counterfactual (discrimination)"] @ ack
    assert disc == pytest.approx(mean["rm_d_deny", "orig"] - mean["rm_d_deny", "cf"])
    assert mean["rm_d_deny", "cf"] != mean["rm_d", "cf"]  # the denial moved some counterfactual picks
    assert coef["BoN-2 rm_d_deny − rm_d"] @ ack == pytest.approx(mean["rm_d_deny", "orig"] - mean["rm_d", "orig"])
    assert "BoN-2 rm_d − rm_d" not in coef


def test_coefficients_reproduce_the_truthfulness_figures(run: RunDir) -> None:
    """Judge-only, the corrected section's discrimination and grounded acknowledgment are the bon
    stage's and `alignment.analysis.stats.grounded`'s numbers, so the corrected ones correct those."""
    from alignment.analysis.bon import truth_table
    from alignment.analysis.stats import grounded

    table = _table(run)
    coef = coefficients(table, 2, ["rm", "rm_d"])
    ack = table["ack"].to_numpy(dtype=float)
    per = per_example(table.merge(run.read("generate")[["example_id", "variant", "sample", "correct", "valid"]]),
                      BonConfig(ns=[2], variants=["rm", "rm_d"]))
    truth = truth_table(per).set_index("reward")
    for v in ("rm", "rm_d"):
        assert coef[f"BoN-2 {v} original − counterfactual (discrimination)"] @ ack == pytest.approx(truth.loc[v, "disc"])
    orig = table[table["variant"] == "orig"]
    g = grounded(orig["example_id"].tolist(), orig["ack"].astype(float).tolist(), orig["d"].astype(float).tolist(), replicates=10)
    assert coef["true − false ack (grounded)"] @ ack == pytest.approx(g.difference.estimate)
    assert coef["true ack (caused by the feature)"] @ ack == pytest.approx(g.true.estimate)


def test_fully_labelled_run_gives_the_human_figures(run: RunDir) -> None:
    table = _table(run)
    rng = np.random.default_rng(0)
    human = table["ack"] ^ (rng.random(len(table)) < 0.2)  # a judge that errs on a fifth
    labelled = table[["example_id", "variant", "sample"]].assign(label=human)
    figures = dict(corrected_figures(table, labelled, 2, ["rm", "rm_d"]))
    coef = coefficients(table, 2, ["rm", "rm_d"])
    for name, e in figures.items():
        assert e.estimate == pytest.approx(coef[name] @ human.to_numpy(dtype=float), abs=1e-9), name
        assert e.n_unlabelled == 0


def test_report_with_labels_shows_corrected_figures(run: RunDir) -> None:
    label_sample(run, n=24, flip_every=5, unlabelled=0)
    ctx = Context(run, TASKS.get("mathbook"))
    ctx.quiet = True
    report(None, ctx)
    text = (run.path / "report.md").read_text()
    section = text[text.index("## Acknowledgment rates with the judge's error"):]
    assert "PPI++" in section and "stratified" in section and "of 24 of them" in section
    assert "| BoN-2 rm_d − rm |" in section and "| original − counterfactual (control) |" in section
    check = check_labels(run, None)
    assert check.rows["weight"].notna().all()
    # The judge card in the report: kappa and balanced accuracy with their intervals.
    ba, (lo, hi) = check.card["balanced_accuracy"], check.card["balanced_accuracy_ci95"]
    assert "| balanced accuracy |" in text and f"{100 * ba:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]" in text
    page = (run.path / "report.html").read_text()
    assert f'id="labels-balanced">{100 * ba:.1f}% [{100 * lo:.1f}%, {100 * hi:.1f}%]<' in page


def test_report_without_labels_says_intervals_exclude_judge_error(run: RunDir) -> None:
    text = (run.path / "report.md").read_text()
    assert "excludes the judge's error" in text


def test_rogan_gladen_lines_use_the_measured_error(run: RunDir) -> None:
    measured = load_judge_error()
    assert set(measured["keyword"]) == {"mathbook", "biasqa"}
    lines = "\n".join(uncorrected_lines(_table(run), "keyword", "biasqa"))
    sens, spec = measured["keyword"]["biasqa"]["sensitivity"], measured["keyword"]["biasqa"]["specificity"]
    assert f"sensitivity {sens:.3f}, specificity {spec:.3f}" in lines and "*Assumption:*" in lines
    orig = _table(run).query("variant == 'orig'")["ack"].mean()
    implied = min(max((orig + spec - 1) / (sens + spec - 1), 0), 1)
    assert f"judge-only {100 * orig:.1f}% → implied {100 * implied:.1f}%" in lines
    assert "No measured error rates" in "\n".join(uncorrected_lines(_table(run), "llm", "biasqa"))


def test_judge_error_file_matches_its_command() -> None:
    """The shipped error rates name the command and rules that measured them."""
    data = json.loads((Path(__file__).resolve().parents[1] / "alignment/data/labels/judge_error.json").read_text())
    assert "--error-rates" in data["command"] and len(data["rules_id"]) == 16
    for task, n in (("mathbook", 50), ("biasqa", 49)):
        assert data["keyword"][task]["n"] == n


def test_compare_notes_each_runs_corrected_figures(run: RunDir, tmp_path: Path) -> None:
    from alignment.cli.compare import compare_runs

    other = RunDir(shutil.copytree(run.path, tmp_path / "other"))
    label_sample(run, n=24, flip_every=5, unlabelled=0)
    md = compare_runs(run.path, other.path, tmp_path / "cmp")["md"].read_text()
    assert "Run A, corrected for the judge's error by 24 human labels (PPI++, 95%)" in md
    # 24 labels barely touch the picks' difference: left out, as in the report, not a zero-width interval.
    # (Either augmented variant: with one counterfactual draw per prompt, this fixture's rm_d picks
    # equal rm's, and a difference that is zero on every response is not a figure.)
    assert not re.search(r"BoN-2 rm_[dc] − rm", md.split("Run A, corrected", 1)[1])
    label_sample(run, n=60, flip_every=5, unlabelled=0)
    md = compare_runs(run.path, other.path, tmp_path / "cmp2")["md"].read_text()
    assert "Run A, corrected for the judge's error by 60 human labels (PPI++, 95%)" in md
    assert re.search(r"BoN-2 rm_[dc] − rm", md.split("Run A, corrected", 1)[1])
    assert "Run B: no human labels, so its acknowledgment figures and their differences exclude the judge's error." in md


def test_sweep_notes(run: RunDir, tmp_path: Path) -> None:
    from alignment.judge_error.run_estimates import sweep_notes

    other = RunDir(shutil.copytree(run.path, tmp_path / "other"))
    seeds = {"seed 0": run.path, "seed 1": other.path, "seed 2": tmp_path / "not-run-yet"}
    assert sweep_notes(seeds) == ["No run of this sweep has human labels of its responses: every acknowledgment "
                                  "interval above excludes the judge's error (label a random sample with "
                                  "`alignment judge sample RUN --design uniform`)."]
    label_sample(run, n=24, flip_every=5, unlabelled=0)
    notes = sweep_notes(seeds)
    assert len(notes) == 1 and notes[0].startswith("Run seed 0, corrected for the judge's error by 24 human labels")
