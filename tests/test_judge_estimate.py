"""Prediction-powered acknowledgment rates: `pytest -q tests/test_judge_estimate.py`.

The estimator (`alignment.judge_error.ppi`), `alignment judge estimate`, and the validation simulation
(`alignment.measure.ppi_validation`) on synthetic populations and, where present, on the real
development half (`../shared/data/ack_labels`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from alignment.analysis.stats import wilson_interval
from alignment.cli import main
from alignment.errors import UserError
from alignment.judge_error.ppi import ppi_difference, ppi_linear, ppi_rate, rogan_gladen
from alignment.measure.ppi_validation import simulate


def _population(m: int, rate: float, sens: float, spec: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Human labels and a judge with the given sensitivity and specificity."""
    rng = np.random.default_rng(seed)
    y = rng.random(m) < rate
    j = np.where(y, rng.random(m) < sens, rng.random(m) > spec)
    return y, j


def test_corrected_rate_is_unbiased_where_the_judge_is_not() -> None:
    # A judge that flags far more than people do (spec 0.7): its rate is off by ~0.2.
    y, j = _population(400, 0.2, 0.9, 0.7, seed=1)
    rng = np.random.default_rng(2)
    ests, covered = [], []
    for _ in range(300):
        idx = rng.choice(len(y), 40, replace=False)
        e = ppi_rate(j.tolist(), idx.tolist(), y[idx].tolist())
        ests.append(e.estimate)
        covered.append(e.low <= y.mean() <= e.high)
    assert abs(j.mean() - y.mean()) > 0.15
    assert abs(np.mean(ests) - y.mean()) < 0.02
    assert np.mean(covered) >= 0.9


def test_estimate_moves_from_labels_toward_judge_with_lambda_in_0_1() -> None:
    y, j = _population(200, 0.3, 0.95, 0.95, seed=3)
    idx = list(range(0, 200, 5))
    e = ppi_rate(j.tolist(), idx, y[idx].tolist())
    # PPI++: mean_L(y) + lambda * (mean_all(judge) - mean_L(judge)) for a lambda in [0, 1].
    lam = (e.estimate - y[idx].mean()) / (j.mean() - j[idx].mean())
    assert 0 <= lam <= 1
    assert e.n_labelled == 40 and e.n_unlabelled == 160 and e.judge_only == pytest.approx(j.mean())
    assert e.labels_only == pytest.approx(wilson_interval(int(y[idx].sum()), 40))
    # A good judge (95% agreement) narrows the interval below the labels' own.
    assert e.high - e.low < e.labels_only[1] - e.labels_only[0]


def test_constant_judge_falls_back_to_the_labels() -> None:
    e = ppi_rate([False] * 30, [0, 1, 2, 3, 4], [True, False, False, True, False])
    assert e.estimate == pytest.approx(0.4) and e.judge_only == 0.0
    assert 0 <= e.low < 0.4 < e.high <= 1


def test_weights_honour_a_stratified_sample() -> None:
    # 10 judge-ack responses (all truly ack), 90 judge-no (10 truly ack). A stratified sample takes
    # 5 from each stratum; unweighted, the sample's ack share (60%) would stand for the run's.
    judge = [True] * 10 + [False] * 90
    labelled = [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]
    labels = [True] * 5 + [True, False, False, False, False]
    e = ppi_rate(judge, labelled, labels, weights=[2.0] * 5 + [18.0] * 5)
    assert "stratified" in e.method
    # truth by strata: 0.1 * 1.0 + 0.9 * 0.2 = 0.28; the unweighted labels would say 0.6.
    assert abs(e.estimate - 0.28) < 0.06
    assert e.labels_only[0] < 0.28 < e.labels_only[1]


def test_paired_difference_uses_the_same_labels() -> None:
    # Prompt p has two picks: under A response 2p, under B response 2p + 1.
    y, j = _population(400, 0.3, 0.9, 0.8, seed=5)
    a = [0.005 if k % 2 == 0 else 0.0 for k in range(400)]
    b = [0.0 if k % 2 == 0 else 0.005 for k in range(400)]
    truth = float(np.dot(a, y) - np.dot(b, y))
    rng = np.random.default_rng(6)
    covered, ests = [], []
    for _ in range(200):
        idx = rng.choice(400, 50, replace=False)
        d = ppi_difference(a, b, j.tolist(), idx.tolist(), y[idx].tolist())
        covered.append(d.low <= truth <= d.high)
        ests.append(d.estimate)
    assert d.judge_only == pytest.approx(float(np.dot(a, j) - np.dot(b, j)))
    assert np.mean(covered) >= 0.9 and abs(np.mean(ests) - truth) < 0.02
    # Every response labelled: the estimate is the exact difference.
    full = ppi_difference(a, b, j.tolist(), list(range(400)), y.tolist())
    assert full.estimate == pytest.approx(truth) and full.n_unlabelled == 0


@pytest.mark.parametrize(("args", "match"), [
    (([0.5, 0.5], [True, False], [0, 1], [True, False], [0.0, 1.0]), "weights"),
    (([0.5, 0.5], [True], [0], [True], None), "coefficients"),
    (([0.5, 0.5], [True, False], [0, 0], [True, True], None), "distinct"),
    (([0.5, float("nan")], [True, False], [0], [True], None), "finite"),
    (([0.5, 0.5], [True, False], [], [], None), "at least two"),
    (([0.5, 0.5], [True, False], [0], [True], None), "at least two"),
])
def test_bad_inputs_are_user_errors(args: tuple, match: str) -> None:
    with pytest.raises(UserError, match=match):
        ppi_linear(*args)


def test_rogan_gladen_inverts_the_judges_error() -> None:
    sens, spec, true = 0.8, 0.9, 0.25
    observed = true * sens + (1 - true) * (1 - spec)
    assert rogan_gladen(observed, sens, spec) == pytest.approx(true)


def _write(path: Path, rows: list) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def judged(tmp_path: Path) -> str:
    return _write(tmp_path / "J.jsonl", [{"id": f"r{i}", "ack": i % 4 == 0, "full_response": "x"} for i in range(40)])


def test_cli_json_shape(tmp_path: Path, judged: str, capsys: pytest.CaptureFixture[str]) -> None:
    labels = _write(tmp_path / "L.jsonl", [{"id": f"r{i}", "ack_label": i % 3 == 0} for i in range(0, 40, 2)]
                    + [{"id": "r1", "ack_label": None}])
    assert main(["judge", "estimate", "--judged", judged, "--labels", labels, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"estimate", "ci", "judge_only", "labels_only_ci", "n_labelled", "n_unlabelled", "method"}
    assert out["n_labelled"] == 20 and out["n_unlabelled"] == 20 and out["judge_only"] == 0.25
    assert out["ci"][0] <= out["estimate"] <= out["ci"][1] and "PPI++" in out["method"]
    assert main(["judge", "estimate", "--judged", judged, "--labels", labels]) == 0
    text = capsys.readouterr().out
    assert "corrected acknowledgment rate" in text and "n labelled: 20, n unlabelled: 20 (1 label rows still null)" in text
    assert "undercover" not in text
    few = _write(tmp_path / "few.jsonl", [{"id": f"r{i}", "ack_label": i == 0} for i in range(5)])
    assert main(["judge", "estimate", "--judged", judged, "--labels", few]) == 0
    assert "note: only 5 labels" in capsys.readouterr().out


@pytest.mark.parametrize(("rows", "message"), [
    ([{"id": "nope", "ack_label": True}], "line 1: id 'nope' is not in the judged file"),
    ([{"id": "r1", "ack_label": None}], "no labelled rows"),
    ([{"id": "r1", "ack_label": "yes"}], "line 1: field 'ack_label' must be true, false or null"),
    ([{"id": "r1", "ack_label": True}, {"id": "r1", "ack_label": False}], "line 2: id 'r1' is labelled twice"),
    ([{"id": "r1", "ack_label": True, "weight": -1}], "line 1: field 'weight' must be a finite number > 0"),
    (['{"id": "r1", "ack_label": true, "weight": Infinity}'], "line 1: not valid JSON"),
    ([], "no labelled rows"),
    ([{"id": "r1", "ack_label": True}], "only 1 labelled row; an interval needs at least 2"),
])
def test_cli_bad_labels_exit_2_with_one_line(tmp_path: Path, judged: str, rows: list, message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    labels = _write(tmp_path / "L.jsonl", rows)
    assert main(["judge", "estimate", "--judged", judged, "--labels", labels]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_bad_judged_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    labels = _write(tmp_path / "L.jsonl", [{"id": "a", "ack_label": True}])
    dup = _write(tmp_path / "J.jsonl", [{"id": "a", "ack": True}, {"id": "a", "ack": False}])
    assert main(["judge", "estimate", "--judged", dup, "--labels", labels]) == 2
    assert "line 2: id 'a' appears twice" in capsys.readouterr().err
    bad = _write(tmp_path / "J2.jsonl", [{"id": "a", "ack": 1}])
    assert main(["judge", "estimate", "--judged", bad, "--labels", labels]) == 2
    assert "field 'ack' must be true or false" in capsys.readouterr().err


def test_simulation_flags_a_biased_judge() -> None:
    y, _ = _population(60, 0.25, 1.0, 1.0, seed=7)
    s = simulate("t", y.tolist(), y.tolist(), draws=200, n=20, seed=0, flip=0.3)
    assert s.judge_agreement == pytest.approx(0.7, abs=0.03)
    assert s.coverage["PPI++"] >= 0.88 and s.judge_only_coverage < 0.5
    assert s.width_ratio <= 1.1


@pytest.mark.parametrize("task", ["mathbook", "biasqa"])
def test_issue_targets_on_the_real_development_half(shared_data: Path, task: str) -> None:
    """The PPI targets on the real development half (regression; results/ppi_validation.md has the full run)."""
    from alignment.measure.ppi_validation import load

    labels, judge = load(shared_data / "ack_labels", task)
    s = simulate(task, labels, judge, draws=300, n=20, seed=0)
    assert s.coverage["PPI++"] >= 0.88 and s.width_ratio <= 1.1
    if task == "mathbook":
        assert s.width_ratio < 1
