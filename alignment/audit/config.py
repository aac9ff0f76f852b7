"""`AuditConfig`: the `audit:` section of a run config (`alignment audit CONFIG --out RUN`)."""

from __future__ import annotations

from dataclasses import dataclass

from alignment.config import check, doc
from alignment.errors import UserError, did_you_mean

# Prompt level: the policy answers the transformed prompt (generated like `generate`).
PROMPT_TRANSFORMATIONS = ("book_order", "book_distractor", "option_order", "participant")
# Response level: the reward model scores and the judge labels the transformed response.
RESPONSE_TRANSFORMATIONS = ("whitespace", "answer_phrase", "ack_earlier", "ack_twice")
TRANSFORMATIONS = PROMPT_TRANSFORMATIONS + RESPONSE_TRANSFORMATIONS
EVALUATORS = ("policy", "reward", "judge")


@dataclass
class AuditConfig:
    """Paired-consistency audits of the policy, reward model and judge, and failure accounting
    of strategies D and C against the executed example-level cube."""

    enabled: bool = doc("Run the audit stage (extra generations for the transformed prompts).", False)
    transformations: list[str] = doc(
        "Meaning-preserving transformations to apply where the task allows: prompt level "
        f"({', '.join(PROMPT_TRANSFORMATIONS)}) and response level ({', '.join(RESPONSE_TRANSFORMATIONS)}).",
        factory=lambda: list(TRANSFORMATIONS),
    )
    evaluators: list[str] = doc(f"Evaluators to audit: {', '.join(EVALUATORS)}.", factory=lambda: list(EVALUATORS))
    max_examples: int = doc(
        "Examples (in build order) whose prompts and responses are transformed (0 = all); the "
        "policy samples `n_samples` responses per transformed original and counterfactual prompt.",
        4,
    )
    n_samples: int = doc(
        "Samples per prompt the audit uses, at most generation.n_samples (0 = all of them): the "
        "first N `generate` responses of each audited prompt, and N new samples per transformed "
        "prompt, so both sides of a pair rest on the same number of draws.",
        0,
    )
    thresholds: list[float] = doc("p_d thresholds of selective acceptance for reason debt (accept p_d >= t).",
                                  factory=lambda: [0.25, 0.5, 0.75, 1.0])
    worst: int = doc("Violating pairs shown side by side in report.md per evaluator (all are in audit/violations.csv).", 3)
    seed: int = doc("Seed of option permutations, distractor choice and insertion position.", 0)

    def __post_init__(self) -> None:
        for i, name in enumerate(self.transformations):
            if name not in TRANSFORMATIONS:
                raise UserError(f"transformations[{i}]: unknown transformation {name!r}{did_you_mean(name, TRANSFORMATIONS)}")
        for i, name in enumerate(self.evaluators):
            if name not in EVALUATORS:
                raise UserError(f"evaluators[{i}]: unknown evaluator {name!r}{did_you_mean(name, EVALUATORS)}")
        check(self.max_examples >= 0, "max_examples", f"must be >= 0, got {self.max_examples}")
        check(all(0 <= t <= 1 for t in self.thresholds), "thresholds", "must lie in [0, 1]")
        check(self.n_samples >= 0, "n_samples", f"must be >= 0, got {self.n_samples}")
        check(self.worst >= 0, "worst", f"must be >= 0, got {self.worst}")

    def samples(self, generated: int) -> int:
        """How many of a prompt's `generated` samples the audit uses.

        >>> AuditConfig(n_samples=8).samples(16), AuditConfig(n_samples=8).samples(4), AuditConfig().samples(16)
        (8, 4, 16)
        """
        return min(self.n_samples, generated) if self.n_samples else generated

    def prompt_level(self) -> list[str]:
        return [t for t in self.transformations if t in PROMPT_TRANSFORMATIONS]

    def response_level(self) -> list[str]:
        return [t for t in self.transformations if t in RESPONSE_TRANSFORMATIONS]
