"""`.venv/bin/python -m pytest -q tests/test_reasonbench_learners.py`: the learner registry.

TF-IDF's confidences are SVM margins; the `sft` learner calls `alignment.reasonbench.experiments.sft`'s
`train` / `predict` (replaced here by a test-local fake module, nothing in the package), and its
text-only output goes through the same parser, certification and outcomes, with unparseable
completions counted and the cross-target agreement used as its confidence.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml

import alignment.reasonbench.experiments
from alignment.cli import main
from alignment.reasonbench.experiments.experiment_config import ExperimentConfig, TfidfConfig
from alignment.reasonbench.experiments.learners import TrainSet, make_learner
from alignment.reasonbench.experiments.targets import parse, prompt_for


@dataclass(frozen=True)
class FakeSFTConfig:
    model: str = "smollm2-135m"
    lora_r: int = 16


def _fake_train(cfg: FakeSFTConfig, prompts: list[str], completions: list[str], out_dir: Path, seed: int) -> dict:
    (out_dir / "adapter").mkdir(parents=True, exist_ok=True)
    (out_dir / "adapter" / "memory.json").write_text(json.dumps(dict(zip(prompts, completions, strict=True))))
    tokens = sum(len(c.split()) for c in completions)
    return {"train_tokens": tokens, "train_seconds": 0.5, "train_tokens_per_s": tokens / 0.5,
            "steps": 1, "resumed_from": None, "dtype": "float32"}  # fmt: skip


def _fake_predict(cfg: FakeSFTConfig, out_dir: Path, prompts: list[str]) -> tuple[list[str], dict]:
    """An oracle that reads the gold completions from the run's targets table (out_dir is
    <run>/train/models/<regime>/sft/<target>/seed<k>), garbles every 4th answer and keeps the
    training answer's mode for every 3rd, so the two targets sometimes disagree."""
    table = pd.read_parquet(out_dir.parents[5] / "targets" / "data.parquet")
    target = out_dir.parent.name
    gold = dict(zip((prompt_for(target, x) for x in table["input"]), table[f"completion_{target}"], strict=True))
    mode = pd.Series(json.loads((out_dir / "adapter" / "memory.json").read_text())).value_counts().index[0]
    texts = ["I am not sure." if i % 4 == 0 else mode if i % 3 == 0 else gold[p] for i, p in enumerate(prompts)]
    return texts, {"cases": len(prompts), "seconds": 1.0, "cases_per_s": float(len(prompts))}


@pytest.fixture
def fake_sft(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("alignment.reasonbench.experiments.sft")
    mod.SFTConfig, mod.train, mod.predict = FakeSFTConfig, _fake_train, _fake_predict  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "alignment.reasonbench.experiments.sft", mod)
    monkeypatch.setattr(alignment.reasonbench.experiments, "sft", mod, raising=False)
    return mod


def test_tfidf_confidence_is_the_svm_margin(tmp_path: Path) -> None:
    inputs = [f"amended {w} and {v}" for w in ("G", "N", "A", "GN") for v in ("x", "y", "z", "w")]
    fields = [{"old": "deny", "new": "approve" if "G" in s else "deny",
               "receipt": ["G"] if "G" in s else []} for s in inputs]  # fmt: skip
    completions = [f"old: {f['old']}\nnew: {f['new']}\nreceipt: {'G' if f['receipt'] else 'none'}" for f in fields]
    learner = make_learner("tfidf", ExperimentConfig(learners=["tfidf"], tfidf=TfidfConfig(min_df=1)))
    learner.train("direct_receipt", TrainSet(inputs, inputs, completions, fields), tmp_path, 0)
    texts, conf, _ = learner.predict("direct_receipt", tmp_path, inputs, inputs)
    assert texts == completions and all(parse("direct_receipt", t).ok for t in texts)
    assert conf is not None and min(conf) > 0 and len(set(conf)) > 1


def test_sft_learner_runs_through_the_fake_module(fake_sft: types.ModuleType, tmp_path: Path) -> None:
    data = {"name": "rbsft", "reasonbench": {
        "benchmark": {"scale": 0.01, "seed": 5}, "targets": ["direct_receipt", "cube"],
        "learners": ["sft"], "seeds": [0], "cardinality": False,
        "sft": {"lora_r": 4}, "bootstrap": {"replicates": 20}, "selective": {"coverages": [0.5, 1.0]}}}  # fmt: skip
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(data))
    out = tmp_path / "run"
    assert main(["run", str(cfg), "--out", str(out), "--quiet"]) == 0
    train = json.loads((out / "train" / "manifest.json").read_text())
    assert train["models"] == {"sft": "smollm2-135m"}
    assert all(s["train_tokens_per_s"] > 0 for s in train["models_stats"].values())
    preds = pd.read_parquet(out / "predict" / "data.parquet")
    garbage = preds["raw"] == "I am not sure."
    assert garbage.sum() > 0 and (garbage == ~preds["parse_ok"]).all()
    predict = json.loads((out / "predict" / "manifest.json").read_text())
    assert predict["rows"]["unparseable"] == int(garbage.sum())
    m = pd.read_csv(out / "evaluate" / "metrics.csv")
    overall = m[(m["table"] == "locked") & (m["group"] == "overall") & (m["metric"] == "parse_fail")]
    locked = preds[(preds["split"] == "locked") & preds["control_type"].isna()]
    for target, g in locked.groupby("target"):
        got = overall[overall["target"] == target]["estimate"].iloc[0]
        assert got == pytest.approx((~g["parse_ok"]).mean())  # counted, never dropped
    assert (m["table"] == "selective").any()  # agreement between the two targets as confidence


def test_bad_sft_section_is_one_line(fake_sft: types.ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"reasonbench": {"learners": ["sft"], "sft": {"lora_rr": 3}}}))
    assert main(["run", str(cfg), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "sft: unknown key 'lora_rr' (did you mean 'lora_r'?)" in err and len(err.splitlines()) == 1


def test_sft_scores_under_confidences_become_the_confidence(fake_sft: types.ModuleType, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    learner = make_learner("sft", ExperimentConfig(learners=["sft"]))
    scored = lambda cfg, out, prompts: (["x"] * len(prompts), {"cases": len(prompts), "confidences": [-0.5, -2.0]})  # noqa: E731
    monkeypatch.setattr(fake_sft, "predict", scored)
    texts, conf, stats = learner.predict("cube", tmp_path, ["a", "b"], ["a", "b"])
    assert conf == [-0.5, -2.0] and "confidences" not in stats
    monkeypatch.setattr(fake_sft, "predict", lambda cfg, out, prompts: (["x"] * 2, {"confidences": [float("nan"), 1.0]}))
    assert learner.predict("cube", tmp_path, ["a", "b"], ["a", "b"])[1] is None  # not usable: agreement instead
