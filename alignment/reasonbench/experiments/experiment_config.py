"""`ExperimentRunConfig`: the typed config of a ReasonBench experiment run.

A YAML config whose top level has a `reasonbench:` section is an experiment config
(`is_experiment`); `alignment run` hands it to `alignment.reasonbench.experiments.experiment` instead of the
organism pipeline, so existing configs (which have no such key) are read exactly as before. The
top level holds only `name` and `reasonbench`; unknown keys anywhere are rejected with a
suggestion, `--set reasonbench.seeds=[0,1]` overrides any field, and `alignment config show
CONFIG` prints the resolved config (without CONFIG, every field's documentation).

`reasonbench.sft` is passed as a mapping to `SFTConfig` of `alignment.reasonbench.experiments.sft` (fields
documented there), validated when the config is loaded if the `sft` learner is listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from alignment.config import apply_overrides, check, doc, from_dict, read_yaml
from alignment.errors import UserError
from alignment.receipts.accounting import DEFAULT_TARGETS
from alignment.run_config import check_run_name

Target = Literal["direct_verdict", "direct_receipt", "rationale_receipt", "cube"]
LearnerName = Literal["majority", "tfidf", "sft"]
SECTION = "reasonbench"


@dataclass
class BenchmarkConfig:
    """Which benchmark build the experiment reads."""

    seed: int = doc("Generator seed of `alignment reasonbench build`.", 0)
    scale: float = doc("Fraction of the published sizes, in (0, 1]; 1 = the paper's 19,520 cases.", 1.0)
    path: str | None = doc("An existing build folder to read instead of building one into the "
                           "run dir (its manifest's seed and scale are used as they are).", None)  # fmt: skip
    workers: int = doc("Processes for building (rows do not depend on it).", 1)

    def __post_init__(self) -> None:
        check(0 < self.scale <= 1, "scale", f"must be in (0, 1], got {self.scale}")
        check(1 <= self.workers <= 64, "workers", f"must be between 1 and 64, got {self.workers}")
        check(self.path is None or bool(self.path.strip()), "path", "must not be empty")


@dataclass
class TfidfConfig:
    """Character TF-IDF + linear SVM (`alignment reasonbench baseline`'s model), one per field."""

    C: float = doc("LinearSVC regularisation.", 0.5)
    min_df: int = doc("TfidfVectorizer min_df.", 3)

    def __post_init__(self) -> None:
        check(self.C > 0, "C", f"must be positive, got {self.C}")
        check(self.min_df >= 1, "min_df", f"must be at least 1, got {self.min_df}")


@dataclass
class SelectiveConfig:
    """Selective acceptance: thresholds fitted on calibration, reason debt on the locked test."""

    coverages: list[float] = doc("Accepted-change coverage targets fitted on calibration.",
                                 factory=lambda: list(DEFAULT_TARGETS))  # fmt: skip
    confidence: Literal["auto", "agreement"] = doc(
        "auto: the learner's own score where it has one (TF-IDF: SVM margin; majority: the "
        "training share of its answer), else agreement; agreement: the share of the other receipt "
        "targets of the same learner and seed that give the same revised verdict and receipt.",
        "auto",
    )

    def __post_init__(self) -> None:
        for c in self.coverages:
            check(0 < c <= 1, "coverages", f"every target must lie in (0, 1], got {c}")
        check(bool(self.coverages), "coverages", "must not be empty")


@dataclass
class BootstrapConfig:
    """Hierarchical bootstrap over seeds and independent units (`alignment.analysis.stats`)."""

    replicates: int = doc("Bootstrap replicates per interval.", 2000)
    confidence: float = doc("Interval level.", 0.95)
    seed: int = doc("Seed of the resampling.", 0)

    def __post_init__(self) -> None:
        check(10 <= self.replicates <= 100_000, "replicates", f"must be in [10, 100000], got {self.replicates}")
        check(0 < self.confidence < 1, "confidence", f"must lie in (0, 1), got {self.confidence}")


@dataclass
class ExperimentConfig:
    """The `reasonbench:` section: benchmark, targets, learners, seeds and analysis settings."""

    benchmark: BenchmarkConfig = doc("The benchmark build (see benchmark.*).", factory=BenchmarkConfig)
    targets: list[Target] = doc("Targets to train and evaluate.",
                                factory=lambda: ["direct_verdict", "direct_receipt", "rationale_receipt", "cube"])  # fmt: skip
    learners: list[LearnerName] = doc("Learners: majority, tfidf, sft (LoRA SFT, alignment.reasonbench.experiments.sft).",
                                      factory=lambda: ["majority", "tfidf"])  # fmt: skip
    seeds: list[int] = doc("Training seeds (the paper: 5).", factory=lambda: [0, 1, 2, 3, 4])
    surface_seeds: int = doc("> 0: majority and tfidf (the surface diagnostics, nearly seed-free) "
                             "train only on the first N seeds; 0 = every seed.", 0)  # fmt: skip
    permutation_augment: bool = doc("Also train every model on the train cases plus a permutation "
                                    "control of each (regime `augmented`).", False)  # fmt: skip
    cardinality: bool = doc("Also train on single-source train cases and test on multi-source "
                            "locked cases (regime `cardinality`).", True)  # fmt: skip
    max_train_cases: int = doc("Cap on training cases per model (a seeded sample; 0 = all).", 0)
    max_eval_cases: int = doc("Cap on evaluated main cases per split (a seeded sample of whole "
                              "units' cases keeps their controls; 0 = all).", 0)  # fmt: skip
    tfidf: TfidfConfig = doc("TF-IDF learner settings (see tfidf.*).", factory=TfidfConfig)
    sft: dict[str, Any] = doc("SFTConfig fields for the sft learner (alignment.reasonbench.experiments.sft).", factory=dict)
    selective: SelectiveConfig = doc("Selective acceptance (see selective.*).", factory=SelectiveConfig)
    bootstrap: BootstrapConfig = doc("Intervals (see bootstrap.*).", factory=BootstrapConfig)

    def __post_init__(self) -> None:
        for name in ("targets", "learners", "seeds"):
            values = getattr(self, name)
            check(bool(values), name, "must not be empty")
            check(len(set(values)) == len(values), name, f"has duplicates: {values}")
        check(self.surface_seeds >= 0, "surface_seeds", "must be 0 (every seed) or positive")
        check(self.max_train_cases >= 0, "max_train_cases", "must be 0 (all) or positive")
        check(self.max_eval_cases >= 0, "max_eval_cases", "must be 0 (all) or positive")
        if "sft" in self.learners:  # validated only when used: the module pulls in torch
            sft_config(self.sft)


def sft_config(data: dict[str, Any]) -> Any:
    """`SFTConfig` from the `sft` mapping, importing the SFT module only now (it pulls in torch)."""
    try:
        from alignment.reasonbench.experiments import sft
    except ImportError as e:
        raise UserError(f"sft: the SFT learner is not available ({e})") from None
    try:
        return from_dict(sft.SFTConfig, data, "sft")
    except UserError as e:
        msg = str(e)
        raise UserError(msg if msg.startswith("sft") else f"sft.{msg}") from None


@dataclass
class ExperimentRunConfig:
    """A ReasonBench experiment run: `name` and the `reasonbench` section."""

    name: str = doc("Run name; the default run dir is runs/<name>/.", "reasonbench")
    reasonbench: ExperimentConfig = doc("The experiment (see reasonbench.*).", factory=ExperimentConfig)

    def __post_init__(self) -> None:
        check_run_name(self.name)

    @property
    def exp(self) -> ExperimentConfig:
        return self.reasonbench


def is_experiment(path: str | Path | None) -> bool:
    """Whether a YAML config is a ReasonBench experiment (a top-level `reasonbench:` key)."""
    if path is None:
        return False
    try:
        return SECTION in read_yaml(path)
    except UserError:
        return False  # the organism loader reports the problem in its own words


def load_experiment(path: str | Path, overrides: list[str] | None = None) -> ExperimentRunConfig:
    """Defaults < YAML < `--set`; the run name defaults to the file's stem."""
    data = read_yaml(path)
    data.setdefault("name", Path(path).stem)
    data = apply_overrides(data, overrides or [])
    return from_dict(ExperimentRunConfig, data)
