"""`alignment run configs/reasonbench_*.yaml`: the ReasonBench experiments as five stages.

`targets` (build or reuse the benchmark, write every case's input and its four target
completions), `train` (one model per regime x learner x target x seed), `predict` (decode every
evaluated case, parse strictly, certify by execution), `evaluate` (`alignment.reasonbench.experiments.evaluate`)
and `report` (`alignment.reasonbench.experiments.tables`). Each is also `alignment reasonbench STAGE CONFIG`.

Conventions are the runner's (`alignment.runner`): a stage's key hashes the config fields it
reads and the keys of the stages it reads; a stage whose manifest carries its key is skipped; the
manifest (`RunDir.finish`) records timing, counts and per-model stats (training cases/s, SFT
training tokens/s, evaluation cases/s). Inside `train` and `predict`, every model is its own
keyed folder (`cache.keyed_dir`), so an interrupted stage resumes with the finished models, and
adding a seed trains only the new seed. All files are written atomically.

Regimes: `standard` (train split), `augmented` (train split plus a permutation control of each
train case; with `permutation_augment`), `cardinality` (single-source train cases, evaluated on
the locked multi-source cases; with `cardinality`). Standard and augmented models are evaluated
on the calibration split, the locked test with its controls, and every shift.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.cache import file_hash, keyed_dir
from alignment.config import config_hash
from alignment.errors import UserError, did_you_mean
from alignment.reasonbench.experiments.experiment_config import (
    ExperimentConfig,
    ExperimentRunConfig,
)
from alignment.runtime.console import stage_line
from alignment.store import RunDir, read_parquet, write_json, write_parquet

STAGES = ("targets", "train", "predict", "evaluate", "report")
# config fields each stage reads (its key), besides the keys of the stages before it
_READS: dict[str, tuple[str, ...]] = {
    "targets": ("benchmark",),
    "train": ("targets", "learners", "seeds", "surface_seeds", "permutation_augment", "cardinality",
              "max_train_cases", "tfidf", "sft"),
    "predict": ("max_eval_cases",),
    "evaluate": ("selective", "bootstrap"),
    "report": (),
}
_INPUTS = {"targets": (), "train": ("targets",), "predict": ("targets", "train"),
           "evaluate": ("predict",), "report": ("evaluate",)}  # fmt: skip


def regimes(cfg: ExperimentConfig) -> list[str]:
    return ["standard"] + ["augmented"] * cfg.permutation_augment + ["cardinality"] * cfg.cardinality


def bench_dir(cfg: ExperimentConfig, run: RunDir) -> Path:
    return Path(cfg.benchmark.path) if cfg.benchmark.path else run.stage("targets") / "benchmark"


def stage_key(name: str, cfg: ExperimentConfig, run: RunDir) -> str:
    parts: dict[str, Any] = {f: asdict(cfg)[f] for f in _READS[name]}
    parts["inputs"] = {dep: run.key(dep) for dep in _INPUTS[name]}
    if name == "predict":  # predict reads what train read too
        parts["train"] = {f: asdict(cfg)[f] for f in _READS["train"]}
    if name == "targets" and cfg.benchmark.path:
        from alignment.reasonbench.benchmark.build import FILE

        path = Path(cfg.benchmark.path) / FILE
        if not path.is_file():
            raise UserError(f"reasonbench.benchmark.path: no {FILE} in {cfg.benchmark.path}")
        parts["benchmark_file"] = file_hash(path)
    return config_hash({"stage": name, **parts})


# ---------------------------------------------------------------------------------- stages


def stage_targets(cfg: ExperimentConfig, run: RunDir, log: Callable[[str], None]) -> tuple[dict, dict]:
    from alignment.reasonbench.benchmark.audit import load
    from alignment.reasonbench.benchmark.build import MANIFEST, BuildConfig, build
    from alignment.reasonbench.experiments.targets import targets_table

    folder = bench_dir(cfg, run)
    b = cfg.benchmark
    if not b.path:
        build(BuildConfig(folder, b.seed, b.scale, quiet=True, workers=b.workers))
    table = targets_table(load(folder), augment_seed=b.seed)
    write_parquet(run.stage("targets") / "data.parquet", table)
    manifest = read_json_or_empty(folder / MANIFEST)
    log(f"targets: {len(table)} cases from {folder}")
    extra = {"benchmark": {k: manifest.get(k) for k in ("seed", "scale", "code_version", "counts")} | {"dir": str(folder)}}
    return {"cases": len(table), "augment": int(table["augment"].sum())}, extra


def read_json_or_empty(path: Path) -> dict[str, Any]:
    import json

    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _load_targets(run: RunDir) -> pd.DataFrame:
    return read_parquet(run.stage("targets") / "data.parquet", ("id", "input", "split", "augment"))


def train_rows(targets: pd.DataFrame, regime: str, cfg: ExperimentConfig) -> pd.DataFrame:
    main = targets["control_type"].isna()
    if regime == "standard":
        rows = targets[(targets["split"] == "train") & main]
    elif regime == "augmented":
        rows = targets[(targets["split"] == "train") & (main | targets["augment"])]
    else:
        rows = targets[(targets["cardinality_split"] == "train") & main]
    if cfg.max_train_cases and len(rows) > cfg.max_train_cases:
        rows = rows.sample(cfg.max_train_cases, random_state=0).sort_index()  # same data every seed
    if rows.empty:
        raise UserError(f"regime {regime}: no training cases in this benchmark build")
    return rows


def eval_rows(targets: pd.DataFrame, regime: str, cfg: ExperimentConfig) -> pd.DataFrame:
    if regime == "cardinality":
        rows = targets[(targets["cardinality_split"] == "test") & targets["control_type"].isna()]
    else:
        rows = targets[targets["split"] != "train"]
    if rows.empty:
        raise UserError(f"regime {regime}: no evaluation cases in this benchmark build")
    if not cfg.max_eval_cases:
        return rows
    main = rows[rows["control_type"].isna()]
    keep = pd.concat([g.sample(min(len(g), cfg.max_eval_cases), random_state=0)["id"]
                      for _, g in main.groupby("split")])  # fmt: skip
    return rows[rows["id"].isin(keep) | rows["control_of"].isin(keep)]


def models(cfg: ExperimentConfig) -> list[tuple[str, str, str, int]]:
    """(regime, learner, target, seed) of every model, in training order."""
    def seeds(learner: str) -> list[int]:
        n = cfg.surface_seeds if learner in ("majority", "tfidf") else 0
        return cfg.seeds[:n] if n else cfg.seeds

    return [(r, le, t, s) for r in regimes(cfg) for le in cfg.learners for t in cfg.targets for s in seeds(le)]


def model_name(m: tuple[str, str, str, int]) -> str:
    return f"{m[0]}/{m[1]}/{m[2]}/seed{m[3]}"


def model_key(m: tuple[str, str, str, int], cfg: ExperimentConfig, run: RunDir) -> str:
    learner_cfg = asdict(cfg.tfidf) if m[1] == "tfidf" else cfg.sft if m[1] == "sft" else {}
    return config_hash({"model": m, "learner": learner_cfg, "max_train_cases": cfg.max_train_cases,
                        "targets": run.key("targets")})  # fmt: skip


def stage_train(cfg: ExperimentConfig, run: RunDir, log: Callable[[str], None]) -> tuple[dict, dict]:
    from alignment.reasonbench.experiments.learners import TrainSet, make_learner, timed_train
    from alignment.reasonbench.experiments.targets import gold_fields, prompt_for

    targets = _load_targets(run)
    stats: dict[str, Any] = {}
    trained = 0
    for m in models(cfg):
        regime, learner_name, target, seed = m
        folder = keyed_dir(run.stage("train") / "models" / model_name(m), model_key(m, cfg, run))
        done = folder / "stats.json"
        if done.is_file():
            stats[model_name(m)] = read_json_or_empty(done)
            continue
        rows = train_rows(targets, regime, cfg).to_dict("records")
        data = TrainSet([prompt_for(target, r["input"]) for r in rows], [r["input"] for r in rows],
                        [r[f"completion_{target}"] for r in rows], [gold_fields(r) for r in rows])  # fmt: skip
        log(f"train {model_name(m)} on {len(rows)} cases")
        s = timed_train(make_learner(learner_name, cfg), target, data, folder, seed)
        write_json(done, s)
        stats[model_name(m)] = s
        trained += 1
    return {"models": len(stats), "trained": trained}, {"models_stats": stats}


def stage_predict(cfg: ExperimentConfig, run: RunDir, log: Callable[[str], None]) -> tuple[dict, dict]:
    from alignment.reasonbench.experiments.predict import predict_model

    targets = _load_targets(run)
    parts, stats = [], {}
    ex = None
    for m in models(cfg):
        # the model's own key, not the train stage's: adding a seed keeps the other predictions
        key = config_hash({"model": model_key(m, cfg, run), "max_eval_cases": cfg.max_eval_cases})
        folder = keyed_dir(run.stage("predict") / "models" / model_name(m), key)
        train_dir = run.stage("train") / "models" / model_name(m)
        part, s, ex = predict_model(m, cfg, eval_rows(targets, m[0], cfg), train_dir, folder, ex)
        log(f"predict {model_name(m)}: {len(part)} cases ({s.get('cases_per_s')} cases/s)")
        parts.append(part)
        stats[model_name(m)] = s
    preds = pd.concat(parts, ignore_index=True)
    write_parquet(run.stage("predict") / "data.parquet", preds)
    counts = {"predictions": len(preds), "unparseable": int((~preds["parse_ok"]).sum()),
              "certified": int(preds["certified"].sum())}  # fmt: skip
    return counts, {"models_stats": stats}


def stage_evaluate(cfg: ExperimentConfig, run: RunDir, log: Callable[[str], None]) -> tuple[dict, dict]:
    from alignment.reasonbench.experiments.evaluate import evaluate
    from alignment.store import write_text

    preds = read_parquet(run.stage("predict") / "data.parquet", ("id", "raw", "parse_ok"))
    start = time.perf_counter()
    metrics, _ = evaluate(preds, cfg)
    write_text(run.stage("evaluate") / "metrics.csv", metrics.to_csv(index=False))
    log(f"evaluate: {len(metrics)} metric rows in {time.perf_counter() - start:.1f}s")
    return {"metrics": len(metrics)}, {}


def stage_report(cfg: ExperimentConfig, run: RunDir, log: Callable[[str], None]) -> tuple[dict, dict]:
    from alignment.reasonbench.experiments.tables import write_report

    metrics = pd.read_csv(run.stage("evaluate") / "metrics.csv")
    files = write_report(metrics, run.stage("report"), run.path / "report.md")
    log(f"report: {run.path / 'report.md'} and {len(files)} files in {run.stage('report')}")
    return {"files": len(files)}, {}


FUNCS = {"targets": stage_targets, "train": stage_train, "predict": stage_predict,
         "evaluate": stage_evaluate, "report": stage_report}  # fmt: skip


def run_stage(name: str, rcfg: ExperimentRunConfig, run: RunDir, quiet: bool = False) -> bool:
    """Run one stage unless its key is unchanged; returns True when it ran."""
    if name not in FUNCS:
        raise UserError(f"unknown stage {name!r}{did_you_mean(name, STAGES)}")
    from alignment.runner import StageResult, run_keyed

    cfg = rcfg.reasonbench
    for dep in _INPUTS[name]:
        run.require(dep)

    def body() -> StageResult:
        from alignment.runtime.console import detail

        counts, extra = FUNCS[name](cfg, run, (lambda m: None) if quiet else detail)
        if "sft" in cfg.learners:
            from alignment.reasonbench.experiments.experiment_config import sft_config

            return counts, {"sft": str(sft_config(cfg.sft).model)}, extra
        return counts, {}, extra

    return run_keyed(name, stage_key(name, cfg, run), run, body, quiet, stage_line)


def run_all(rcfg: ExperimentRunConfig, run: RunDir, quiet: bool = False, stages: list[str] | None = None) -> None:
    for name in STAGES:
        if stages is None or name in stages:
            run_stage(name, rcfg, run, quiet)
