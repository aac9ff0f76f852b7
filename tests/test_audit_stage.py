"""`.venv/bin/python -m pytest -q tests/test_audit_stage.py`: a whole tiny-model run with the audit on
(receipts on too, so D and C are accounted against the full cube), and the `audit` subcommand."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import yaml

from alignment.cli import main


def tiny_config(tmp_path: Path, tiny_llama_dir: Path, tiny_classifier_dir: Path, **audit) -> Path:
    cfg = {
        "name": "tiny",
        "task": {"name": "mathbook", "source": "synthetic", "n_examples": 3},
        "generation": {"model": str(tiny_llama_dir), "n_samples": 2, "max_new_tokens": 6, "batch_size": 8,
                       "device": "cpu", "dtype": "float32"},
        "attribution": {"receipts": True},
        "reward": {"backend": "classifier", "model": str(tiny_classifier_dir), "device": "cpu", "dtype": "float32"},
        "judge": {"name": "keyword"},
        "bon": {"ns": [1, 2]},
        "audit": {"enabled": True, "max_examples": 2, **audit},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_tiny_run_with_the_audit_on(tmp_path: Path, tiny_llama_dir: Path, tiny_classifier_dir: Path) -> None:
    path, out = tiny_config(tmp_path, tiny_llama_dir, tiny_classifier_dir), tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    folder = out / "audit"
    summary = pd.read_csv(folder / "consistency.csv")
    # Math Book offers every transformation but the BiasQA participant one.
    for evaluator, names in {"policy": ["book_order", "book_distractor", "option_order"],
                             "reward": ["whitespace", "ack_earlier", "ack_twice"],
                             "judge": ["whitespace", "ack_earlier", "ack_twice", "counterfactual"]}.items():
        mine = summary[summary["evaluator"] == evaluator]
        assert set(names) <= set(mine["transformation"]), evaluator
        rated = mine[mine["pairs"] > 0]
        assert ((rated["ci_low"] <= rated["consistency"]) & (rated["consistency"] <= rated["ci_high"])).all()
    policy = summary[(summary["evaluator"] == "policy") & (summary["relation"] == "modal answer") & (summary["transformation"] != "participant")]
    assert (policy["pairs"] == 2).all() and (policy["skipped"] == 0).all()
    participant = summary[summary["transformation"] == "participant"]
    assert (participant["pairs"] == 0).all() and (participant["skipped"] == 2).all()
    # Transformed prompts are sampled with the base prompts' seeds.
    gen, ctrl = pd.read_parquet(out / "generate" / "data.parquet"), pd.read_parquet(folder / "responses.parquet")
    seeds = dict(zip(zip(gen["example_id"], gen["variant"], gen["sample"], strict=True), gen["seed"], strict=True))
    assert all(seeds[k] == s for k, s in zip(zip(ctrl["example_id"], ctrl["variant"], ctrl["sample"], strict=True), ctrl["seed"], strict=True))
    acc = pd.read_csv(folder / "accounting.csv")
    assert {("feature cube", "D"), ("feature cube", "C"), ("full cube", "D"), ("full cube", "D cube")} <= set(zip(acc["gold"], acc["strategy"], strict=True))
    assert (acc["cases"] == 3 * 2).all()  # every sampled original response of every example
    debt = pd.read_csv(folder / "debt.csv")
    assert "p_d >= 0.5" in set(debt["acceptance"])
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["audit_seconds"]) == {"policy", "reward", "judge", "accounting"}
    report = (out / "report.md").read_text()
    assert "## Evaluator audit: paired consistency" in report and "## Strategies D and C against the executed cube" in report
    # The subcommand exists and a finished audit is skipped.
    mtime = (folder / "manifest.json").stat().st_mtime
    assert main(["audit", str(path), "--out", str(out), "--quiet"]) == 0
    assert (folder / "manifest.json").stat().st_mtime == mtime


def test_an_unknown_transformation_is_one_line(tmp_path: Path, tiny_llama_dir: Path, tiny_classifier_dir: Path, capsys) -> None:
    path = tiny_config(tmp_path, tiny_llama_dir, tiny_classifier_dir, transformations=["book_ordre"])
    assert main(["audit", str(path), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "audit.transformations[0]" in err and "did you mean 'book_order'" in err


def test_audit_n_samples_uses_the_first_n_draws_on_both_sides(tmp_path: Path, tiny_llama_dir: Path, tiny_classifier_dir: Path) -> None:
    # generation draws 2 samples per prompt; the audit uses 1: sample 0 of every base prompt, and
    # one new sample (with sample 0's seed) per transformed prompt.
    path, out = tiny_config(tmp_path, tiny_llama_dir, tiny_classifier_dir, n_samples=1), tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    folder = out / "audit"
    ctrl = pd.read_parquet(folder / "responses.parquet")
    assert len(ctrl) and set(ctrl["sample"]) == {0}
    scores = pd.read_parquet(folder / "reward_scores.parquet")
    assert len(scores) and set(scores["sample"]) == {0}
    gen = pd.read_parquet(out / "generate" / "data.parquet")
    assert set(gen["sample"]) == {0, 1}  # generate itself is unchanged
    acc = pd.read_csv(folder / "accounting.csv")
    assert (acc["cases"] == 3 * 2).all()  # accounting still covers every sampled response
