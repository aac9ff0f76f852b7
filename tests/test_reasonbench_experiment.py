"""`.venv/bin/python -m pytest -q tests/test_reasonbench_experiment.py`: the experiment as a run.

`alignment run` on a tiny ReasonBench experiment config (majority and TF-IDF, two targets, two
seeds, the cardinality regime) writes every stage with its manifest, the paper-shaped tables
and figures; every metric is recomputable from the saved predictions; a rerun skips every
stage; bad configs fail with one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment.cli import main
from alignment.reasonbench.experiments.evaluate import evaluate
from alignment.reasonbench.experiments.experiment import eval_rows, models, train_rows
from alignment.reasonbench.experiments.experiment_config import load_experiment

REPO = Path(__file__).resolve().parents[1]
TINY = {
    "name": "rbtiny",
    "reasonbench": {
        "benchmark": {"seed": 0, "scale": 0.02},
        "targets": ["direct_receipt", "cube"],
        "learners": ["majority", "tfidf"],
        "seeds": [0, 1],
        "cardinality": True,
        "selective": {"coverages": [0.5, 1.0]},
        "bootstrap": {"replicates": 50},
    },
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("rbx")
    cfg = folder / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(TINY))
    assert main(["run", str(cfg), "--out", str(folder / "run"), "--quiet"]) == 0
    return cfg, folder / "run"


def test_every_stage_writes_its_manifest_and_the_report(run: tuple[Path, Path]) -> None:
    _, out = run
    for stage in ("targets", "train", "predict", "evaluate", "report"):
        assert (out / stage / "manifest.json").is_file(), stage
    train = yaml.safe_load((out / "train" / "manifest.json").read_text())
    stats = train["models_stats"]
    assert len(stats) == 2 * 2 * 2 * 2  # regimes x learners x targets x seeds
    assert all(s["train_cases_per_s"] > 0 for s in stats.values())
    predict = yaml.safe_load((out / "predict" / "manifest.json").read_text())
    assert all(s["cases"] > 0 and "cases_per_s" in s for s in predict["models_stats"].values())
    for name in ("overall", "strata", "receipt_size", "shifts", "controls", "consistency",
                 "accounting", "certification", "cardinality", "selective", "comparison"):  # fmt: skip
        for suffix in ("csv", "md", "tex"):
            assert (out / "report" / f"{name}.{suffix}").stat().st_size > 0, (name, suffix)
    assert (out / "report" / "consistency.png").stat().st_size > 1000
    assert (out / "report" / "reason_debt.png").stat().st_size > 1000
    assert "## Cube - direct receipt" in (out / "report.md").read_text()


def test_metrics_are_recomputable_from_saved_predictions(run: tuple[Path, Path]) -> None:
    cfg, out = run
    preds = pd.read_parquet(out / "predict" / "data.parquet")
    assert {"raw", "parse_ok", "pred_receipt", "certified", "executions", "confidence"} <= set(preds.columns)
    again, _ = evaluate(preds, load_experiment(cfg).reasonbench)
    saved = pd.read_csv(out / "evaluate" / "metrics.csv")
    pd.testing.assert_frame_equal(again.reset_index(drop=True), saved, check_dtype=False, atol=1e-12)


def test_majority_scores_what_its_modal_completion_earns(run: tuple[Path, Path]) -> None:
    _, out = run
    targets = pd.read_parquet(out / "targets" / "data.parquet")
    train = targets[(targets["split"] == "train") & targets["control_type"].isna()]
    locked = targets[(targets["split"] == "locked") & targets["control_type"].isna()]
    mode = train["completion_direct_receipt"].value_counts().index[0]
    want = (locked["completion_direct_receipt"].str.split("\n").str[1] == mode.split("\n")[1]).mean()
    m = pd.read_csv(out / "evaluate" / "metrics.csv")
    row = m[(m["table"] == "locked") & (m["regime"] == "standard") & (m["learner"] == "majority")
            & (m["target"] == "direct_receipt") & (m["group"] == "overall") & (m["metric"] == "verdict_acc")]  # fmt: skip
    assert row["estimate"].iloc[0] == pytest.approx(want)
    assert row["n"].iloc[0] == 2 * len(locked)  # every case under both seeds


def test_a_rerun_skips_every_stage(run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cfg, out = run
    capsys.readouterr()
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    assert capsys.readouterr().out.count("up to date, skipped") == 5


def test_one_stage_subcommand_reruns_when_its_section_changes(run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    cfg, out = run
    capsys.readouterr()
    args = ["reasonbench", "evaluate", str(cfg), "--out", str(out), "--set", "reasonbench.bootstrap.replicates=40"]
    assert main(args) == 0
    assert "[evaluate] done" in capsys.readouterr().out
    assert main(["reasonbench", "train", str(cfg), "--out", str(out)]) == 0
    assert "[train] up to date" in capsys.readouterr().out


def test_regimes_train_and_test_on_their_own_cases(run: tuple[Path, Path]) -> None:
    cfg, out = run
    targets = pd.read_parquet(out / "targets" / "data.parquet")
    exp = load_experiment(cfg, ["reasonbench.max_eval_cases=2"]).reasonbench
    std, aug = train_rows(targets, "standard", exp), train_rows(targets, "augmented", exp)
    assert len(aug) == 2 * len(std) and set(aug.loc[aug["augment"], "control_of"]) == set(std["id"])
    card = train_rows(targets, "cardinality", exp)
    assert (card["cardinality"] == "single").all() and (card["split"] == "train").all()
    test = eval_rows(targets, "cardinality", exp)
    assert (test["cardinality"] == "multi").all() and (test["split"] == "locked").all()
    capped = eval_rows(targets, "standard", exp)
    main_rows = capped[capped["control_type"].isna()]
    assert main_rows.groupby("split").size().max() == 2 and "train" not in set(capped["split"])
    locked = set(main_rows.loc[main_rows["split"] == "locked", "id"])
    assert capped["control_of"].dropna().value_counts().to_dict() == dict.fromkeys(locked, 3)
    once = models(load_experiment(cfg, ["reasonbench.surface_seeds=1"]).reasonbench)
    assert len(once) == 2 * 2 * 2 and {m[3] for m in once} == {0}  # surface learners: first seed only


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"reasonbench": {"learnrs": ["majority"]}}, "did you mean 'learners'"),
        ({"reasonbench": {"targets": ["cubes"]}}, "reasonbench.targets[0]"),
        ({"reasonbench": {"seeds": []}}, "seeds: must not be empty"),
        ({"reasonbench": {"benchmark": {"scale": 2.0}}}, "scale: must be in (0, 1]"),
        ({"task": {"name": "mathbook"}}, "unknown key 'task'"),
    ],
)
def test_bad_configs_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: dict, message: str) -> None:
    data = {"name": "bad", "reasonbench": {"learners": ["majority"]}}
    for k, v in edit.items():
        data[k] = {**data.get(k, {}), **v} if isinstance(v, dict) and k in data else v
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump(data))
    assert main(["run", str(cfg), "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_set_override_and_non_experiment_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(TINY))
    assert main(["run", str(cfg), "--set", "reasonbench.seeds=[0, 0]"]) == 2
    assert "duplicates" in capsys.readouterr().err
    assert main(["config", "show", str(cfg), "--set", "reasonbench.seeds=[3]"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["reasonbench"]["seeds"] == [3]
    assert main(["reasonbench", "train", str(REPO / "configs" / "embedded_default.yaml")]) == 2
    assert "not a ReasonBench experiment config" in capsys.readouterr().err


def test_an_interrupted_train_stage_resumes_with_its_finished_models(run: tuple[Path, Path]) -> None:
    cfg, out = run
    (out / "train" / "manifest.json").unlink()  # as if killed before the stage finished
    (out / "train" / "models" / "standard" / "majority" / "cube" / "seed1" / "stats.json").unlink()
    assert main(["reasonbench", "train", str(cfg), "--out", str(out), "--quiet"]) == 0
    manifest = yaml.safe_load((out / "train" / "manifest.json").read_text())
    assert manifest["rows"] == {"models": 16, "trained": 1}


@pytest.mark.parametrize("path", sorted((REPO / "configs").glob("reasonbench_*.yaml")), ids=lambda p: p.name)
def test_shipped_experiment_configs_load(path: Path) -> None:
    from alignment.config import from_dict, to_dict
    from alignment.reasonbench.experiments.experiment_config import (
        ExperimentRunConfig,
        is_experiment,
    )

    assert is_experiment(path)
    surface = load_experiment(path, ["reasonbench.learners=[majority,tfidf]"])  # no SFT module needed
    assert from_dict(ExperimentRunConfig, to_dict(surface)) == surface  # loads back unchanged
    assert surface.name == path.stem
    rb = surface.reasonbench
    if path.stem == "reasonbench_embedded":
        # Sized for 40 minutes on two cores: capped data, two seeds, the cardinality regime, and
        # enough optimizer steps per SFT model to learn the answer format.
        assert rb.max_train_cases > 0 and rb.max_eval_cases > 0 and len(rb.seeds) >= 2 and rb.cardinality
        sft = rb.sft if isinstance(rb.sft, dict) else vars(rb.sft)  # typed only where the SFT module loads
        assert rb.max_train_cases * sft["epochs"] / sft["batch_size"] >= 20
        assert {"direct_receipt", "cube"} <= set(rb.targets)
    else:  # the GPU presets run the paper's design in full
        assert rb.cardinality and len(rb.seeds) == 5 and rb.max_train_cases == 0 and rb.max_eval_cases == 0
    if "sft" in yaml.safe_load(path.read_text())["reasonbench"]["learners"]:
        pytest.importorskip("alignment.reasonbench.experiments.sft")  # rbsft's module
        cfg = load_experiment(path)
        assert from_dict(ExperimentRunConfig, to_dict(cfg)) == cfg
