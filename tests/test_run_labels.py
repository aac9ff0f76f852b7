"""Human labels of a run's responses: matched to the run's stored verdicts, stale and foreign rows
skipped with counts, and the report stage rebuilt when a labels file appears or changes."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from fake_run import fake_run, label_sample

from alignment.config import from_dict
from alignment.errors import UserError
from alignment.judge_error.run_labels import check_labels, find_labels
from alignment.run_config import RunConfig
from alignment.runner import run_stage
from alignment.store import RunDir


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    return fake_run(tmp_path_factory.mktemp("labels") / "run")


@pytest.fixture
def run(base: RunDir, tmp_path: Path) -> RunDir:
    return RunDir(shutil.copytree(base.path, tmp_path / "run"))


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_card_compares_labels_with_the_stored_verdicts(run: RunDir) -> None:
    rows = label_sample(run, n=12, flip_every=4, unlabelled=1)
    check = check_labels(run, None)
    assert check.path == run.path / "judge_sample" / "sample_labelled.jsonl"
    labelled = [r for r in rows if r["ack_label"] is not None]
    ack = run.read("ack").set_index(["example_id", "variant", "sample"])["ack"]
    agree = [r["ack_label"] == bool(ack[(r["example_id"], r["variant"], r["sample"])]) for r in labelled]
    assert check.card["n"] == len(labelled) == 11 and check.skipped["unlabelled"] == 1
    assert check.card["accuracy"] == pytest.approx(sum(agree) / len(agree))
    assert len(check.card["disagreements"]) == agree.count(False) == 3
    assert check.stratified


def test_stale_foreign_and_unlabelled_rows_are_counted_not_used(run: RunDir) -> None:
    rows = label_sample(run, n=8, flip_every=100, unlabelled=0)
    rows[0]["full_response"] += " (edited)"  # the run was regenerated after labelling
    rows[1]["example_id"] = "not-in-this-run"
    rows[2] = {"id": f"{rows[2]['example_id']}/{rows[2]['variant']}/{rows[2]['sample']}", "ack_label": rows[2]["ack_label"]}
    _write(run.path / "judge_sample" / "sample_labelled.jsonl", rows)
    check = check_labels(run, None)
    assert check.card["n"] == 6 and check.card["disagreements"] == []  # row 2 matched through its id
    assert check.skipped["not responses of this run"] == 1
    assert check.skipped["stale (response text changed since labelling)"] == 1


def test_no_labels_file_and_bad_files(run: RunDir, tmp_path: Path) -> None:
    check = check_labels(run, None)
    assert check.path is None and check.card is None and "No human labels" in check.summary()
    assert find_labels(run.path, None) is None
    with pytest.raises(UserError, match="report.labels: .*no such file"):
        check_labels(run, str(tmp_path / "missing.jsonl"))
    rows = label_sample(run, n=4, flip_every=100, unlabelled=0)
    _write(tmp_path / "twice.jsonl", [rows[0], rows[0]])
    with pytest.raises(UserError, match=r"twice.jsonl line 2: response .* is labelled twice"):
        check_labels(run, str(tmp_path / "twice.jsonl"))
    _write(tmp_path / "bad.jsonl", [{**rows[0], "ack_label": "yes"}])
    with pytest.raises(UserError, match="bad.jsonl line 1: field 'ack_label'"):
        check_labels(run, str(tmp_path / "bad.jsonl"))


def _finish_inputs(run: RunDir) -> None:
    """fake_run calls the stages from Python (no manifests); give the report's inputs theirs."""
    for stage in ("build", "generate", "attribute", "score", "ack", "bon"):
        run.finish(stage, f"key-{stage}", time.time(), {})


def test_report_stage_reruns_when_labels_appear_or_change(run: RunDir, tmp_path: Path) -> None:
    _finish_inputs(run)
    cfg = RunConfig(name="run")
    assert run_stage("report", cfg, run, quiet=True)
    assert not run_stage("report", cfg, run, quiet=True)  # nothing changed: skipped
    assert "No human labels" in (run.path / "report.md").read_text()
    rows = label_sample(run, n=6, flip_every=2, unlabelled=0)
    assert run_stage("report", cfg, run, quiet=True)  # labels appeared
    assert "judge disagrees" in (run.path / "report.html").read_text()
    first = (run.path / "report.md").read_text()
    assert not run_stage("report", cfg, run, quiet=True)
    rows[1]["ack_label"] = not rows[1]["ack_label"]
    _write(run.path / "judge_sample" / "sample_labelled.jsonl", rows)
    assert run_stage("report", cfg, run, quiet=True)  # labels changed
    assert (run.path / "report.md").read_text() != first
    other = tmp_path / "elsewhere.jsonl"
    _write(other, rows[:3])
    cfg = from_dict(RunConfig, {"name": "run", "report": {"labels": str(other)}})
    assert run_stage("report", cfg, run, quiet=True)  # another file configured
    assert f"Labels: `{other}`, 3 labelled responses" in (run.path / "report.md").read_text()
    assert run.manifest("report")["labels"]["matched"] == 3


def test_the_labels_key_does_not_depend_on_the_run_dirs_path(run: RunDir, tmp_path: Path) -> None:
    from alignment.judge_error.run_labels import fingerprint

    label_sample(run, n=4)
    copy = shutil.copytree(run.path, tmp_path / "elsewhere" / "copy")
    assert fingerprint(run.path, None) == fingerprint(copy, None)
    assert fingerprint(run.path, None)["judge_sample/sample_labelled.jsonl"] is not None
