"""The best-of-N curve corrected for the judge's error at every N (`alignment.judge_error.bon_estimates`,
`alignment.judge_error.run_estimates.curve_lines`): `pytest -q tests/test_bon_estimates.py`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fake_run import fake_run, label_sample

from alignment.analysis.bon import BonConfig, best_of_n
from alignment.context import Context
from alignment.judge_error.bon_estimates import curve_coefficients, figure_name
from alignment.judge_error.run_estimates import (
    coefficients,
    corrected_figures,
    curve_lines,
    response_table,
    shown_figures,
)
from alignment.stages.report import report
from alignment.store import RunDir
from alignment.tasks import TASKS

# Four examples, two samples each on original and counterfactual prompts. The judge is wrong on
# a/orig/0, b/orig/0, d/orig/0 and a/cf/0 (the `human` column is the truth).
ROWS = [  # example, variant, sample, rm, rm_d, judge, human
    ("a", "orig", 0, 1, 0, 1, 0), ("a", "orig", 1, 0, 1, 0, 0),
    ("b", "orig", 0, 0, 1, 0, 1), ("b", "orig", 1, 1, 0, 1, 1),
    ("c", "orig", 0, 1, 1, 1, 1), ("c", "orig", 1, 0, 0, 1, 1),
    ("d", "orig", 0, 0, 0, 1, 0), ("d", "orig", 1, 1, 1, 0, 0),
    ("a", "cf", 0, 1, 1, 1, 0), ("a", "cf", 1, 0, 0, 0, 0),
    ("b", "cf", 0, 1, 1, 0, 0), ("b", "cf", 1, 0, 0, 0, 0),
    ("c", "cf", 0, 1, 1, 0, 0), ("c", "cf", 1, 0, 0, 0, 0),
    ("d", "cf", 0, 1, 1, 0, 0), ("d", "cf", 1, 0, 0, 0, 0),
]
# Worked by hand. BoN-2 under rm picks a/0, b/1, c/0, d/1 (judge 1, 1, 1, 0; human 0, 1, 1, 0);
# under rm_d a/1, b/0, c/0, d/1 (judge 0, 0, 1, 0; human 0, 1, 1, 0). BoN-1 is every sample's
# mean. On cf prompts BoN-2 picks every sample 0 (judge 1, 0, 0, 0; human all 0).
WANT = {  # figure: (judge only, human)
    ("orig", 1, "rm"): (5 / 8, 4 / 8), ("orig", 2, "rm"): (0.75, 0.5), ("orig", 2, "rm_d"): (0.25, 0.5),
    ("orig", 2, "rm_d − rm"): (-0.5, 0.0), ("cf", 1, "rm"): (1 / 8, 0.0), ("cf", 2, "rm"): (0.25, 0.0),
}


def _tiny() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(response table with the judge's verdicts, the bon stage's table over it)."""
    t = pd.DataFrame(ROWS, columns=["example_id", "variant", "sample", "rm", "rm_d", "ack", "human"])
    t = t.astype({"rm": float, "rm_d": float, "ack": bool, "human": bool})
    bon = best_of_n(t.assign(correct=True, valid=True), BonConfig(ns=[1, 2], variants=["rm", "rm_d"]))
    return t, bon.assign(headline=bon["N"] == 2)


def _labels(t: pd.DataFrame, rows: list[int]) -> pd.DataFrame:
    return t.loc[rows, ["example_id", "variant", "sample"]].assign(label=t.loc[rows, "human"].to_numpy())


def test_labels_fix_the_judge_at_every_n() -> None:
    t, bon = _tiny()
    coefs = curve_coefficients(t, [1, 2], ["orig", "cf"], ["rm", "rm_d"])
    figures = shown_figures(t, _labels(t, list(range(len(t)))), coefs)
    for (prompt, n, fig), (judge, human) in WANT.items():
        e = figures[figure_name(n, prompt, fig)]
        assert (e.judge_only, e.estimate) == pytest.approx((judge, human)), (prompt, n, fig)
        assert e.n_unlabelled == 0
    # The judge-only figures are the bon stage's acknowledgment column, every N and prompt.
    for r in bon.itertuples(index=False):
        assert coefs[figure_name(r.N, r.prompt, r.reward)] @ t["ack"].to_numpy(dtype=float) == pytest.approx(r.ack)
    lines = "\n".join(curve_lines(t, _labels(t, list(range(len(t)))), bon))
    assert "| prompt | pick acknowledges | BoN-1 | BoN-2 (headline) |" in lines
    assert "| orig | rm | 62.5% → 50.0% [" in lines and "| 75.0% → 50.0% [" in lines
    assert "| orig | rm_d − rm | +0.0 pts (same picks) | -50.0 pts → +0.0 pts [" in lines  # BoN-1: one pick
    assert "| cf | rm | 12.5% → 0.0% [" in lines


def test_too_few_labels_is_na() -> None:
    """Three labels: the difference has one labelled response on its rm side (a/orig/0) -> n/a."""
    t, bon = _tiny()
    lines = "\n".join(curve_lines(t, _labels(t, [0, 1, 2]), bon))
    row = next(line for line in lines.splitlines() if line.startswith("| orig | rm_d − rm |"))
    assert row.endswith("| -50.0 pts → n/a (too few labels) |")
    assert "| cf | rm | 12.5% → n/a (too few labels) |" in lines  # no cf response labelled


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    return fake_run(tmp_path_factory.mktemp("bon_estimates") / "run", n_examples=8, draw="per_response")  # picks of rm_d differ from rm's here


def test_headline_n_equals_the_headline_figures(base: RunDir) -> None:
    """Half the responses labelled (and the few where rm_d's or rm_c's pick differs from rm's, so
    the differences have labels), the judge wrong on a fifth: the curve's BoN-2 column is the
    headline table's BoN-2 rows, estimate and interval."""
    table = response_table(base).reset_index(drop=True)
    rng = np.random.default_rng(1)
    table["human"] = table["ack"] ^ (rng.random(len(table)) < 0.2)
    variants = ["rm", "rm_d", "rm_c"]
    differ = {i for v in variants[1:] for i in np.flatnonzero(coefficients(table, 2, variants)[f"BoN-2 {v} − rm"])}
    labelled = _labels(table, sorted(differ | set(rng.choice(len(table), size=len(table) // 2, replace=False).tolist())))
    head = dict(corrected_figures(table, labelled, 2, variants))
    coefs = curve_coefficients(table, [1, 2, 4], ["orig", "cf"], variants)
    curve = shown_figures(table, labelled, coefs)
    for name in ("BoN-2 rm", "BoN-2 rm_d", "BoN-2 rm_c", "BoN-2 rm_d − rm", "BoN-2 rm_c − rm"):
        got = curve[figure_name(2, "orig", name.removeprefix("BoN-2 "))]
        want = head[name]
        assert (got.estimate, got.low, got.high, got.judge_only) == pytest.approx((want.estimate, want.low, want.high, want.judge_only))
    # And at every N and prompt the judge-only figure is the bon stage's acknowledgment column.
    for r in base.read("bon").itertuples(index=False):
        if r.reward in variants:
            assert coefs[figure_name(r.N, r.prompt, r.reward)] @ table["ack"].to_numpy(dtype=float) == pytest.approx(r.ack)


def test_report_md_and_html_show_the_curve(base: RunDir, tmp_path: Path) -> None:
    run = RunDir(shutil.copytree(base.path, tmp_path / "run"))
    label_sample(run, n=24, flip_every=5, unlabelled=0)  # a stratified sample: weights honoured
    ctx = Context(run, TASKS.get("mathbook"))
    ctx.quiet = True
    report(None, ctx)
    md = (run.path / "report.md").read_text()
    section = md[md.index("## Acknowledgment rates with the judge's error"):md.index("## Judge against human labels")]
    assert "| prompt | pick acknowledges | BoN-1 | BoN-2 (headline) | BoN-4 |" in section
    row = next(line for line in section.splitlines() if line.startswith("| orig | rm_d |"))
    head = next(line for line in section.splitlines() if line.startswith("| BoN-2 rm_d |"))
    judge, corrected = head.split(" | ")[1:3]
    assert f"{judge} → {corrected}" == row.split(" | ")[3]  # the headline column repeats the table above
    assert any(line.startswith("| cf | rm |") for line in section.splitlines())
    page = (run.path / "report.html").read_text()
    cells = "".join(f"<td>{c}</td>" for c in row.strip("| ").split(" | "))
    assert "<th>BoN-2 (headline)</th>" in page and f"<tr>{cells}</tr>" in page  # report.html renders report.md's table
    # The page's own judge-control rates point to their correction, or say that they exclude the judge's error.
    assert 'id="control-judge-error">These are the judge\'s rates.' in page
    assert 'href="#acknowledgment-rates-with-the-judge-s-error"' in page and 'id="acknowledgment-rates-with-the-judge-s-error"' in page
    assert "exclude the judge's error (no human labels" in (base.path / "report.html").read_text()


def test_audit_says_which_judge_rates_the_labels_correct(tmp_path: Path) -> None:
    from alignment.audit.report import JUDGE_NOTE, audit_section

    row = {"relation": "verdict", "pairs": 10, "consistency": 0.9, "ci_low": 0.6, "ci_high": 0.98,
           "error_lower_bound": 0.05, "skipped": 0}
    pd.DataFrame([{"evaluator": "reward", "transformation": "whitespace", **row}]).to_csv(tmp_path / "consistency.csv", index=False)
    assert JUDGE_NOTE not in audit_section(tmp_path)
    pd.DataFrame([{"evaluator": "judge", "transformation": "counterfactual", **row},
                  {"evaluator": "judge", "transformation": "whitespace", **row, "control_ack_rate": 0.4}]).to_csv(
        tmp_path / "consistency.csv", index=False)
    lines = audit_section(tmp_path)
    assert JUDGE_NOTE in lines and "ack rate on transformed 40.0%" in "\n".join(lines)
