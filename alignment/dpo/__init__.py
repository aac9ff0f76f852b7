"""DPO on reward-ranked pairs: `alignment dpo-pairs`, `alignment dpo-train`, `alignment dpo-eval`.

Stages (each `fn(cfg, run, key, quiet)` on the `dpo` config section):
`dpo_pairs` (reads build, generate, score), `dpo_train` (reads dpo-pairs), `dpo_eval` (reads
build, dpo-train). `dpo_report_section(run)` gives report.md's "## DPO" lines.
"""

from alignment.dpo.config import DPOConfig
from alignment.dpo.evaluate import dpo_eval, majority
from alignment.dpo.pairs import dpo_pairs, make_pairs, split_pairs
from alignment.dpo.tables import dpo_report_section
from alignment.dpo.train import dpo_train, train_one

__all__ = ["DPOConfig", "dpo_eval", "dpo_pairs", "dpo_report_section", "majority", "dpo_train", "make_pairs", "split_pairs", "train_one"]
