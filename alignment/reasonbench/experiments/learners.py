"""Learners of the ReasonBench experiments: `majority`, `tfidf` and `sft`, one registry.

Each learner trains on (prompt, completion) pairs of one target and writes what it learned into
its own folder; `predict` reads that folder back and returns raw completions, one confidence per
completion (or None when the learner has no score of its own) and timing stats. Every learner
emits the target's serialisation, so all of them go through the same strict parser,
certification and outcome code (`alignment.reasonbench.experiments.targets`, `certify`, `outcomes`).

- `majority`: the most frequent training completion, whole; confidence = its training share.
- `tfidf`: the surface baseline's character TF-IDF (`baseline.vectorizer`) with one linear SVM per
  field of the target (old and new verdict, the receipt family as one class, the amended
  sources, or each of the 8 cube cells), serialised like the gold completions. Confidence is the
  SVM margin (top minus runner-up decision value) of the field that carries the claim: the
  revised verdict for `direct_verdict`, the receipt class for the receipt targets, and the
  smallest cell margin for `cube`. Models are saved with joblib (a local, trusted artifact).
- `sft`: LoRA SFT of a causal LM (`alignment.reasonbench.experiments.sft.train` / `predict`, imported only
  when used). `predict` returns text and stats; a list under `stats["confidences"]` (one score
  per completion) becomes the confidence, otherwise it is None and selective acceptance uses
  cross-target agreement (see `selective.confidence`).
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from alignment.config import config_hash
from alignment.reasonbench.benchmark.cases import CUBE_KEYS
from alignment.reasonbench.experiments.baseline import receipt_label, svm, vectorizer
from alignment.reasonbench.experiments.experiment_config import ExperimentConfig, sft_config
from alignment.reasonbench.experiments.targets import serialise
from alignment.registry import Registry
from alignment.store import atomic_path, write_json


@dataclass
class TrainSet:
    """What every learner sees for one target: prompts (case + instruction), the case text
    alone (`inputs`, for the surface models), completions, and the gold fields behind them."""

    prompts: list[str]
    inputs: list[str]
    completions: list[str]
    fields: list[dict[str, Any]]


Prediction = tuple[list[str], list[float] | None, dict[str, Any]]


class Learner(Protocol):
    def train(self, target: str, data: TrainSet, out: Path, seed: int) -> dict[str, Any]: ...

    def predict(self, target: str, out: Path, prompts: list[str], inputs: list[str]) -> Prediction: ...


LEARNERS: Registry[Any] = Registry("learner")


def make_learner(name: str, cfg: ExperimentConfig) -> Learner:
    return LEARNERS.get(name)(cfg)


def _rate(n: int, seconds: float) -> float:
    return round(n / seconds, 3) if seconds > 0 else float("nan")


@LEARNERS.register("majority")
class Majority:
    def __init__(self, cfg: ExperimentConfig) -> None:
        pass

    def train(self, target: str, data: TrainSet, out: Path, seed: int) -> dict[str, Any]:
        start = time.perf_counter()
        (text, n), = Counter(data.completions).most_common(1)
        write_json(out / "majority.json", {"completion": text, "share": n / len(data.completions)})
        secs = time.perf_counter() - start
        return {"train_cases": len(data.completions), "train_seconds": secs}

    def predict(self, target: str, out: Path, prompts: list[str], inputs: list[str]) -> Prediction:
        model = json.loads((out / "majority.json").read_text())
        return [model["completion"]] * len(prompts), [float(model["share"])] * len(prompts), {}


FIELDS: dict[str, tuple[str, ...]] = {
    "direct_verdict": ("old", "new"),
    "direct_receipt": ("old", "new", "receipt"),
    "rationale_receipt": ("old", "new", "receipt", "changed"),
    "cube": tuple(f"cell:{k}" for k in CUBE_KEYS),
}
# The field(s) whose margin is the confidence of the whole claim (the minimum when several).
CLAIM: dict[str, tuple[str, ...]] = {
    "direct_verdict": ("new",), "direct_receipt": ("receipt",),
    "rationale_receipt": ("receipt",), "cube": FIELDS["cube"],
}  # fmt: skip


def field_label(fields: dict[str, Any], name: str) -> str:
    """One class label per field value.

    >>> field_label({"receipt": ["G", "NA"]}, "receipt"), field_label({"cells": {"G": "deny"}}, "cell:G")
    ('G|NA', 'deny')
    """
    if name.startswith("cell:"):
        return str(fields["cells"][name[5:]])
    if name == "receipt":
        return receipt_label(fields["receipt"])
    if name == "changed":
        return "".join(fields["changed"])
    return str(fields[name])


def label_fields(labels: dict[str, str]) -> dict[str, Any]:
    """The inverse of `field_label`: fields `serialise` reads, from one label per field."""
    out: dict[str, Any] = {k: v for k, v in labels.items() if k in ("old", "new")}
    if "receipt" in labels:
        out["receipt"] = [] if labels["receipt"] == "none" else labels["receipt"].split("|")
    if "changed" in labels:
        out["changed"] = list(labels["changed"])
    if any(k.startswith("cell:") for k in labels):
        out["cells"] = {k[5:]: v for k, v in labels.items() if k.startswith("cell:")}
    return out


def margins(scores: np.ndarray) -> np.ndarray:
    """Top minus runner-up decision value per row (|score| for a binary SVM's 1-D output).

    >>> margins(np.array([[0.5, -0.2, 0.1], [0.0, 0.3, 0.2]])).round(2).tolist()
    [0.4, 0.1]
    >>> margins(np.array([-0.7, 0.2])).tolist()
    [0.7, 0.2]
    """
    if scores.ndim == 1:
        return np.abs(scores)
    top2 = np.sort(scores, axis=1)[:, -2:]
    return top2[:, 1] - top2[:, 0]


# One entry each: the last fitted featurisation and the last transformed evaluation set.
_FEATURES: dict[str, tuple[Any, Any]] = {}
_MATRICES: dict[tuple[str, str], Any] = {}


@LEARNERS.register("tfidf")
class Tfidf:
    def __init__(self, cfg: ExperimentConfig) -> None:
        self.cfg = cfg.tfidf

    def _features(self, inputs: list[str]) -> tuple[Any, Any, str]:
        """Fitted vectorizer, training matrix and the inputs' hash, computed once per process
        for the same training inputs (every target and seed of a regime shares them)."""
        key = config_hash({"inputs": inputs, "min_df": self.cfg.min_df})
        if key not in _FEATURES:
            vec = vectorizer(self.cfg.min_df)
            x = vec.fit_transform(inputs)
            vec.stop_words_ = None  # the pruned terms: large, and not needed to transform
            _FEATURES.clear()
            _FEATURES[key] = (vec, x)
        return (*_FEATURES[key], key)

    def train(self, target: str, data: TrainSet, out: Path, seed: int) -> dict[str, Any]:
        import joblib

        start = time.perf_counter()
        vec, x, key = self._features(data.inputs)
        models: dict[str, Any] = {}
        for name in FIELDS[target]:
            ys = [field_label(f, name) for f in data.fields]
            # one class in training (possible in small builds): a constant, not an SVM
            models[name] = ys[0] if len(set(ys)) == 1 else svm(self.cfg.C, seed).fit(x, ys)
        with atomic_path(out / "tfidf.joblib") as tmp:
            joblib.dump({"vectorizer": vec, "models": models, "inputs": key}, tmp)
        secs = time.perf_counter() - start
        return {"train_cases": len(data.inputs), "train_seconds": secs, "features": len(vec.vocabulary_)}

    def predict(self, target: str, out: Path, prompts: list[str], inputs: list[str]) -> Prediction:
        import joblib

        saved = joblib.load(out / "tfidf.joblib")
        key = (saved["inputs"], config_hash(inputs))
        if key not in _MATRICES:  # the same regime's vectorizer on the same evaluation cases
            _MATRICES.clear()
            _MATRICES[key] = saved["vectorizer"].transform(inputs)
        x = _MATRICES[key]
        labels: dict[str, list[str]] = {}
        margin: dict[str, np.ndarray] = {}
        for name, model in saved["models"].items():
            if isinstance(model, str):
                labels[name] = [model] * len(inputs)
                continue
            labels[name] = [str(v) for v in model.predict(x)]
            margin[name] = margins(model.decision_function(x))
        texts = [serialise(target, label_fields({k: v[i] for k, v in labels.items()}))
                 for i in range(len(inputs))]  # fmt: skip
        claim = [margin[k] for k in CLAIM[target] if k in margin]
        conf = np.min(claim, axis=0) if claim else np.zeros(len(inputs))
        return texts, [float(c) for c in conf], {}


@LEARNERS.register("sft")
class SFT:
    def __init__(self, cfg: ExperimentConfig) -> None:
        self.cfg = sft_config(cfg.sft)

    def train(self, target: str, data: TrainSet, out: Path, seed: int) -> dict[str, Any]:
        from alignment.reasonbench.experiments import sft

        stats = sft.train(self.cfg, data.prompts, data.completions, out, seed)
        return {"train_cases": len(data.prompts), **stats}

    def predict(self, target: str, out: Path, prompts: list[str], inputs: list[str]) -> Prediction:
        from alignment.reasonbench.experiments import sft

        texts, stats = sft.predict(self.cfg, out, prompts)
        stats = dict(stats)
        # Optional: one score per completion (e.g. its mean token log-probability) under
        # "confidences"; without it the experiment falls back to cross-target agreement.
        scores = stats.pop("confidences", None)
        ok = isinstance(scores, list) and len(scores) == len(prompts) and all(
            isinstance(c, int | float) and math.isfinite(c) for c in scores)
        return list(texts), [float(c) for c in scores] if ok else None, stats


def timed_predict(learner: Learner, target: str, out: Path, prompts: list[str], inputs: list[str]) -> Prediction:
    """`predict` with the runner's timing fields (cases, seconds, cases_per_s) filled in."""
    start = time.perf_counter()
    texts, conf, stats = learner.predict(target, out, prompts, inputs)
    if len(texts) != len(prompts) or (conf is not None and len(conf) != len(prompts)):
        raise RuntimeError(f"learner returned {len(texts)} completions for {len(prompts)} prompts")
    secs = time.perf_counter() - start
    return texts, conf, {"cases": len(prompts), "seconds": round(secs, 3),
                         "cases_per_s": _rate(len(prompts), secs), **stats}  # fmt: skip


def timed_train(learner: Learner, target: str, data: TrainSet, out: Path, seed: int) -> dict[str, Any]:
    start = time.perf_counter()
    stats = learner.train(target, data, out, seed)
    secs = time.perf_counter() - start
    return {"train_cases": len(data.prompts), "wall_seconds": round(secs, 3),
            "train_cases_per_s": _rate(len(data.prompts), secs), **stats}  # fmt: skip
