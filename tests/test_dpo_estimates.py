"""dpo-eval's acknowledgment figures with the judge's error (`alignment.judge_error.dpo_estimates`,
`alignment.judge_error.dpo_labels`, `alignment judge sample RUN --stage dpo-eval`):
`pytest -q tests/test_dpo_estimates.py`. Tiny fake runs, no model."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fake_run import fake_dpo_eval, fake_run

from alignment.cli import main
from alignment.context import Context
from alignment.dpo.effects import effects_table
from alignment.errors import UserError
from alignment.judge_error.dpo_estimates import coefficients, dpo_figures
from alignment.judge_error.dpo_labels import KEYS, read_dpo_labels, response_table
from alignment.stages.report import label_files, report
from alignment.store import RunDir, write_text
from alignment.tasks import TASKS


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    run = fake_run(tmp_path_factory.mktemp("dpo-estimates") / "run", n_examples=6)
    resp = fake_dpo_eval(run)
    write_text(run.stage("dpo-eval") / "effects.csv", effects_table(resp, replicates=200).to_csv(index=False))
    return run


@pytest.fixture
def run(base: RunDir, tmp_path: Path) -> RunDir:
    return RunDir(shutil.copytree(base.path, tmp_path / "run"))


def _sample(run: RunDir, *args: str) -> list[dict]:
    assert main(["judge", "sample", str(run.path), "--stage", "dpo-eval", "--task", "mathbook", *args]) == 0
    return [json.loads(line) for line in (run.path / "judge_sample/dpo-eval/sample.jsonl").read_text().splitlines()]


def _label(run: RunDir, rows: list[dict], flip_every: int = 5) -> None:
    """A person labels the sample: every `flip_every`-th row against the judge, the rest with it."""
    for i, row in enumerate(rows):
        row["ack_label"] = row["judge_ack"] != (i % flip_every == 0)
    (run.path / "judge_sample/dpo-eval/sample_labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _report(run: RunDir) -> str:
    ctx = Context(run, TASKS.get("mathbook"))
    ctx.quiet = True
    report(None, ctx)
    return (run.path / "report.md").read_text()


def test_coefficients_reproduce_the_effects_table(base: RunDir) -> None:
    """Judge-only, every difference is the effects table's pooled point estimate."""
    table = response_table(base)
    coef = coefficients(table)
    ack = table["ack"].to_numpy(dtype=float)
    eff = effects_table(base.read("dpo-eval", "responses.parquet"), replicates=50, per_seed=False)
    names = {"ack_diff": "original prompts", "cf_ack_diff": "counterfactual prompts"}
    checked = 0
    for r in eff[eff["measure"].isin(names)].itertuples(index=False):
        assert coef[f"{r.a} − {r.b}, {names[r.measure]}"] @ ack == pytest.approx(r.est), (r.comparison, r.measure)
        checked += 1
    assert checked == 2 * 3  # rm_d − rm, rm − base, rm_d − base on both prompt variants
    for reward in ("base", "rm", "rm_d"):
        g = table[(table["reward"] == reward) & (table["variant"] == "orig")]
        assert coef[f"{reward}, original prompts"] @ ack == pytest.approx(g["ack"].mean())
        assert coef[f"{reward}, original prompts"].sum() == pytest.approx(1.0)


def test_fully_labelled_gives_the_human_figures(base: RunDir) -> None:
    table = response_table(base)
    human = table["ack"] ^ (np.random.default_rng(0).random(len(table)) < 0.2)
    labelled = table[KEYS].assign(label=human)
    coef = coefficients(table)
    for name, judge_only, e, n in dpo_figures(table, labelled):
        assert e is not None and n == int((coef[name] != 0).sum()), name
        assert e.estimate == pytest.approx(coef[name] @ human.to_numpy(dtype=float), abs=1e-9), name
        assert judge_only == pytest.approx(e.judge_only)


def test_a_figure_with_too_few_labels_is_not_estimated(base: RunDir) -> None:
    """Labels on the base policy only: rm_d's rate would read as exact (zero labels-side
    variance), so it and every difference involving rm_d get no corrected value."""
    table = response_table(base)
    labelled = table[table["reward"] == "base"][KEYS].assign(label=True)
    got = {name: e for name, _, e, _ in dpo_figures(table, labelled)}
    assert got["base, original prompts"] is not None and got["base, original prompts"].estimate == pytest.approx(1.0)
    assert got["rm_d, original prompts"] is None and got["rm_d − rm, original prompts"] is None
    assert got["rm_d − base, original prompts"] is None


@pytest.mark.parametrize("design", ["stratified", "uniform"])
def test_sample_of_dpo_eval_responses_is_blind(run: RunDir, design: str) -> None:
    rows = _sample(run, "--design", design, "--n", "30")
    table = response_table(run)
    assert len(rows) == 30 == len({r["id"] for r in rows})
    known = {tuple(k) for k in table[KEYS].itertuples(index=False)}
    assert all((r["policy"], r["example_id"], r["variant"], r["sample"]) in known for r in rows)
    assert all(r["id"] == f"{r['policy']}/{r['example_id']}/{r['variant']}/{r['sample']}" for r in rows)
    assert all(("weight" in r) == (design == "stratified") for r in rows)
    assert {r["reward"] for r in rows} <= {"base", "rm", "rm_d"}
    page = (run.path / "judge_sample/dpo-eval/sample.html").read_text()
    seen = re.sub(r'<script type="application/json" id="rows">.*?</script>', "", page, flags=re.S)
    for word in ("rm_d", "seed", "/orig/", "/cf/", "judge", "reward", "policy"):
        assert word not in seen, word
    data = json.loads(re.search(r'id="rows">(.*?)</script>', page, flags=re.S).group(1))
    assert all("judge_ack" not in r and "reward" not in r and "train_seed" not in r for r in data)
    assert not (run.path / "judge_sample/sample.jsonl").exists()  # the run's own sample is untouched


def test_report_shows_corrected_dpo_figures(run: RunDir) -> None:
    before = _report(run)
    assert "no human labels cover dpo-eval's responses, so these intervals exclude the judge's error" in before
    key_before = label_files(None, run)
    _label(run, _sample(run, "--design", "uniform", "--n", "60"))
    assert label_files(None, run) != key_before  # labels that appear rebuild the report
    text = _report(run)
    dpo = text[text.index("## DPO"):]
    assert "no human labels cover dpo-eval's responses" not in dpo
    assert "the table after this one corrects the acknowledgment figures" in dpo
    assert "Corrected for the judge's error by human labels of 60 of the 200 dpo-eval responses" in dpo
    # The interval is clustered by prompt (the estimand is the policy over prompts), no longer over responses.
    assert "the 95% interval is **over prompts**" in dpo
    table, labels = response_table(run), read_dpo_labels(run).rows
    figures = {name: (j, e) for name, j, e, _ in dpo_figures(table, labels)}
    j, e = figures["rm_d − rm, original prompts"]
    assert e is not None
    row = next(line for line in dpo.splitlines() if line.startswith("| rm_d − rm, original prompts |"))
    assert f"| {100 * j:+.1f} pts | {100 * e.estimate:+.1f} pts [{100 * e.low:+.1f}, {100 * e.high:+.1f}] |" in row
    for name in ("base, original prompts", "rm, counterfactual prompts", "rm_d − base, counterfactual prompts"):
        assert f"| {name} |" in dpo


def test_label_rows_are_checked(run: RunDir) -> None:
    rows = _sample(run, "--design", "uniform", "--n", "6")
    folder = run.path / "judge_sample/dpo-eval"
    rows[0]["full_response"] += " (edited)"
    rows[1]["policy"] = "rm_x-seed9"
    rows[2]["ack_label"] = None
    for r in rows[3:]:
        r["ack_label"] = True
    rows[0]["ack_label"] = rows[1]["ack_label"] = True
    (folder / "sample_labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_dpo_labels(run)
    assert len(got.rows) == 3 and got.skipped == {"unlabelled": 1, "not dpo-eval responses of this run": 1,
                                                  "stale (response text changed since labelling)": 1}
    (folder / "sample_labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [rows[3], rows[3]]))
    with pytest.raises(UserError, match=r"line 2: response .* is labelled twice"):
        read_dpo_labels(run)
    bad = {k: v for k, v in rows[3].items() if k != "sample"} | {"sample": 1.5}
    (folder / "sample_labelled.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(UserError, match="line 1: field 'sample' must be an integer, got 1.5"):
        read_dpo_labels(run)


def test_sample_without_dpo_eval_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = fake_run(tmp_path / "run", n_examples=2, n_samples=2)
    assert main(["judge", "sample", str(run.path), "--stage", "dpo-eval", "--task", "mathbook"]) == 2
    assert "stage 'dpo-eval' has not run yet" in capsys.readouterr().err


def test_sweep_notes_on_the_dpo_table(run: RunDir, tmp_path: Path) -> None:
    from alignment.judge_error.dpo_estimates import dpo_sweep_notes

    missing = {"seed 2": tmp_path / "not-run-yet"}
    assert dpo_sweep_notes(missing) == []  # no dpo-eval anywhere: the sweep has no DPO table to qualify
    runs = {"seed 0": run.path, "seed 1": shutil.copytree(run.path, tmp_path / "other"), **missing}
    (none,) = dpo_sweep_notes(runs)
    assert none.startswith("No run of this sweep has human labels of its dpo-eval responses: the DPO table's intervals "
                           "exclude the judge's error") and "--stage dpo-eval --design uniform" in none
    _label(run, _sample(run, "--design", "uniform", "--n", "60"))
    notes = dpo_sweep_notes(runs)
    figures = {name: (j, e) for name, j, e, _ in dpo_figures(response_table(run), read_dpo_labels(run).rows)}
    j, e = figures["rm_d − rm, original prompts"]
    assert len(notes) == 1 and notes[0].startswith("Run seed 0, DPO(RM_D) − DPO(RM) corrected for the judge's error by 60")
    assert f"original prompts {100 * e.estimate:+.1f} pts [{100 * e.low:+.1f}, {100 * e.high:+.1f}] (judge only {100 * j:+.1f} pts)" in notes[0]
    assert "counterfactual prompts" in notes[0]
