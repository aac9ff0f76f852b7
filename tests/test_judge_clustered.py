"""Corrected intervals that hold where the toolkit uses them: `pytest -q tests/test_judge_clustered.py`.

Small-sample guards, clustering by prompt (`alignment.judge_error.clustered`), the stratified estimator
with Neyman allocation (`alignment.judge_error.allocation`), `alignment judge estimate` with
`example_id`, and a tiny run of the validation grid (`alignment.measure.validation_grid`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from alignment.analysis.stats import wilson_interval
from alignment.cli import main
from alignment.judge_error.ppi import ppi_linear, ppi_rate
from alignment.measure.validation_grid import (
    JudgeErrors,
    coefficients,
    draw_labels,
    population,
    truths,
)


def test_all_agreeing_labels_never_give_a_zero_width_interval() -> None:
    # 30 labels all "no", the judge says yes on 3%: the old interval was 3e-35 wide.
    judge = [i % 33 == 0 for i in range(2000)]
    e = ppi_rate(judge, list(range(1, 31)), [False] * 30)
    wilson = wilson_interval(0, 30)
    assert e.high - e.low > 0.5 * (wilson[1] - wilson[0])
    assert e.lam == 1.0 and "lambda = 1: only 0 disagreements" in e.method and "power-tuned" not in e.method
    assert "the floor set this interval" in e.method
    # No disagreement seen: the floor is one pseudo-disagreement, a single event, so a t quantile on
    # about 2 degrees of freedom, near the exact binomial bound for 0 of 30 (not the normal 1.96).
    assert "t interval (quantile 4." in e.method


def test_the_labels_alone_are_shown_when_their_interval_is_shorter() -> None:
    # Four labels of ten responses, one disagreement: plain PPI adds the judge's spread over ten
    # responses to the labels', and the labels' own interval is the shorter one.
    judge = [True, False, False, False, True, False, False, False, True, False]
    e = ppi_linear([0.1] * 10, judge, [0, 1, 2, 3], [True, True, False, False])
    assert e.lam == 0.0 and e.method.startswith("labels only (lambda = 0), their interval shorter than that of plain PPI")
    assert (e.low, e.high) == e.labels_only and e.estimate == 0.5


def test_a_rare_rate_with_a_poor_judge_covers() -> None:
    # 3% of 3,200 responses, 120 uniform labels (3-4 positives), a judge with many false positives
    # (lambda near 0): the labels' normal interval undercovered (82% on the grid); the t quantile on
    # the variance's degrees of freedom restores it.
    rng = np.random.default_rng(2)
    truth = truths(0.03, 3, prompts=5000)["rate"]
    errors = JudgeErrors("j", tp=7, fn=3, tn=18, fp=21)
    hits = []
    for _ in range(300):
        pop = population(rng, 0.03)
        sens, spec = errors.draw(rng)
        judge = np.where(pop["y"], rng.random(len(pop["y"])) < sens, rng.random(len(pop["y"])) < 1 - spec)
        idx = rng.choice(len(judge), 120, replace=False)
        e = ppi_rate(judge, idx, pop["y"][idx], clusters=pop["prompt"])
        hits.append(e.low <= truth <= e.high)
        assert "t interval (quantile" in e.method
    assert np.mean(hits) >= 0.9


def test_pick_figures_tune_lambda_on_the_rate_not_the_weights() -> None:
    rng = np.random.default_rng(0)
    pop = population(rng, 0.2, prompts=100)
    c = coefficients(pop)["BoN-8 rm_d"]
    judge = pop["y"] ^ (rng.random(len(c)) < 0.2)
    idx = rng.choice(len(c), 200, replace=False)
    e = ppi_linear(c, judge, idx, pop["y"][idx], clusters=pop["prompt"])
    assert 0 <= e.lam <= 1 and "not on its best-of-N weights" in e.method and "clustered by prompt" in e.method


def _clustered(rng: np.random.Generator, prompts: int, rate: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """16 responses per prompt, prompts' rates spread widely, a judge that misses half."""
    p = rng.beta(rate * 2, (1 - rate) * 2, size=prompts)
    y = rng.random(prompts * 16) < np.repeat(p, 16)
    judge = np.where(y, rng.random(len(y)) < 0.6, rng.random(len(y)) < 0.03)
    return y, judge, np.repeat(np.arange(prompts), 16)


def test_clustering_by_prompt_restores_coverage_of_the_over_prompts_rate() -> None:
    # The estimand is the rate over prompts (0.2 here), not over these 800 responses: with strongly
    # varying prompts the unclustered interval leaves the between-prompt variance out.
    rng = np.random.default_rng(5)
    hits = {"clustered": [], "independent": []}
    for _ in range(300):
        y, judge, prompt = _clustered(rng, 50, 0.2)
        idx = rng.choice(len(y), 120, replace=False)
        for name, cl in (("clustered", prompt), ("independent", None)):
            e = ppi_rate(judge, idx, y[idx], clusters=cl)
            hits[name].append(e.low <= 0.2 <= e.high)
    assert np.mean(hits["clustered"]) >= 0.9
    assert np.mean(hits["independent"]) < np.mean(hits["clustered"]) - 0.05


def test_stratified_estimator_covers_a_rare_rate() -> None:
    # Neyman-allocated stratified sample (variant x verdict), the rate 5%: the old weights-on-a-uniform
    # estimator covered it 50% of the time.
    rng = np.random.default_rng(11)
    truth = truths(0.05, 3, prompts=5000)["rate"]
    errors = JudgeErrors("j", tp=6, fn=4, tn=36, fp=3)
    hits, widths = [], []
    for _ in range(200):
        pop = population(rng, 0.05)
        sens, spec = errors.draw(rng)
        judge = np.where(pop["y"], rng.random(len(pop["y"])) < sens, rng.random(len(pop["y"])) < 1 - spec)
        idx, w, strata = draw_labels(rng, pop, judge, 60, "stratified")
        e = ppi_linear(np.full(len(judge), 1 / len(judge)), judge, idx, pop["y"][idx], weights=w,
                       clusters=pop["prompt"], population_strata=strata)
        hits.append(e.low <= truth <= e.high)
        widths.append(e.high - e.low)
        assert "stratified estimator (4 strata" in e.method
    assert np.mean(hits) >= 0.9 and min(widths) > 0


def test_neyman_allocation_puts_labels_where_the_judge_is_uncertain(tmp_path: Path) -> None:
    from alignment.judge_error.sample import stratified_sample

    rows = [{"variant": "orig", "ack": i < 100, "i": i} for i in range(1000)]
    equal = stratified_sample(rows, 40)
    neyman = stratified_sample(rows, 40, neyman_prior=(0.7, 0.95))
    count = lambda picked: sum(r["stratum"] == "orig/ack" for r in picked)  # noqa: E731
    assert count(equal) == 20 and 2 <= count(neyman) < 20
    assert all(r["weight"] == pytest.approx((100 if r["ack"] else 900) / (count(neyman) if r["ack"] else 40 - count(neyman)))
               for r in neyman)


def test_cli_estimate_clusters_by_example_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    hits = []
    for _ in range(60):
        y, judge, prompt = _clustered(rng, 40, 0.2)
        judged = tmp_path / "J.jsonl"
        judged.write_text("".join(json.dumps({"id": f"r{i}", "ack": bool(judge[i]), "example_id": f"p{prompt[i]}"}) + "\n"
                                  for i in range(len(y))))
        idx = rng.choice(len(y), 80, replace=False)
        labels = tmp_path / "L.jsonl"
        labels.write_text("".join(json.dumps({"id": f"r{i}", "ack_label": bool(y[i])}) + "\n" for i in idx))
        assert main(["judge", "estimate", "--judged", str(judged), "--labels", str(labels), "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert "clustered by prompt (40 prompts)" in out["method"]
        hits.append(out["ci"][0] <= 0.2 <= out["ci"][1])
    assert np.mean(hits) >= 0.9


def test_cli_estimate_refuses_example_id_on_some_rows_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    judged = tmp_path / "J.jsonl"
    judged.write_text(json.dumps({"id": "a", "ack": True, "example_id": "p"}) + "\n" + json.dumps({"id": "b", "ack": False}) + "\n")
    labels = tmp_path / "L.jsonl"
    labels.write_text(json.dumps({"id": "a", "ack_label": True}) + "\n" + json.dumps({"id": "b", "ack_label": False}) + "\n")
    assert main(["judge", "estimate", "--judged", str(judged), "--labels", str(labels)]) == 2
    assert "line 2: field 'example_id' must be on every row or on none" in capsys.readouterr().err


def test_grid_command_writes_its_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "ack_labels"
    if not (data / "mathbook_dev.jsonl").is_file():
        pytest.skip("needs ../shared/data/ack_labels")
    assert main(["judge", "grid", "--replicates", "1", "--data", str(data), "--out", str(tmp_path / "g")]) == 0
    got = json.loads((tmp_path / "g.json").read_text())
    assert len(got["cells"]) == 4 * 4 * 3 * 2 * 4 and got["targets"]["zero_width_intervals"] == 0
    assert "| judge | rate | n | design |" in (tmp_path / "g.md").read_text()


def test_plan_says_how_many_labels_a_figure_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_judge_card import _fake_run

    run = _fake_run(tmp_path / "run")
    figure = "all responses, original prompts"
    assert main(["judge", "plan", str(run), "--figure", figure, "--width", "0.6"]) == 0
    wide = capsys.readouterr().out
    assert main(["judge", "plan", str(run), "--figure", figure, "--width", "0.45"]) == 0
    narrow = capsys.readouterr().out
    assert main(["judge", "plan", str(run), "--figure", figure, "--width", "0.05"]) == 0
    assert "more than the run's 48 responses" in capsys.readouterr().out
    need = [int(re.search(r"wide: (\d+) \(uniform", out).group(1)) for out in (wide, narrow)]
    assert 2 <= need[0] < need[1] and "measured sensitivity" in wide and "--design uniform --n" in wide
    assert main(["judge", "plan", str(run), "--figure", "all responses, orignal prompts", "--width", "0.1"]) == 2
    assert "did you mean 'all responses, original prompts'" in capsys.readouterr().err
