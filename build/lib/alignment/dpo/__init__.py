"""DPO on reward-ranked pairs: pairs, LoRA DPO training (TRL + PEFT), re-evaluation, tables.

The stages are `alignment dpo-pairs`, `alignment dpo-train` and `alignment dpo-eval`
(`alignment.stages.dpo_*`); this package holds what they compute. `dpo_report_section(run)`
gives report.md's "## DPO" lines.
"""

from alignment.dpo.config import DPOConfig
from alignment.dpo.evaluate import majority
from alignment.dpo.pairs import make_pairs, split_pairs
from alignment.dpo.tables import dpo_report_section
from alignment.dpo.train import train_one

__all__ = ["DPOConfig", "dpo_report_section", "majority", "make_pairs", "split_pairs", "train_one"]
