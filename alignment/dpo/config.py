"""`DPOConfig`: the `dpo` section of a run config (`alignment dpo-pairs|dpo-train|dpo-eval CONFIG`).

Pairs come from the sampled responses of `train_split` (and `valid_split`) examples; the trained
policies are evaluated on `eval_split`, which gives no pairs (held out). Defaults are sized for a
small CPU run (≤ 32 pairs, one epoch, one seed, 4 eval samples); `configs/organism_dpo.yaml` is the
measured organism experiment and the paper presets in `configs/paper_dpo_*.yaml` set 3 seeds, 16
eval samples and GPU settings.

The three stages read different fields, so the section is cut into sub-sections (`SUBSECTIONS`):
`pairs` (what dpo-pairs builds), `train` (what one training run computes: `train_one` reuses an
adapter whose train sub-section, seed and pairs are unchanged) and `eval` (what dpo-eval
generates and scores). Every field names the sub-sections that read it, so a new field cannot be
left out of a key: `DPOConfig.subsection` fails on a field that names none. Each DPO stage's key
hashes the sub-sections and fields it declares (`alignment.runner`), so editing an evaluation
setting reuses the trained adapters and editing a training setting retrains them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from alignment.augment.strategies import REWARD_VARIANTS, TWO_SIDED_VARIANTS
from alignment.config import check, doc

# Pairs can come from every variant a run has, and from the two-sided ones where the task has a
# denial sentence (the dpo-pairs stage says so in one line where it has none).
DPO_VARIANTS: tuple[str, ...] = (*REWARD_VARIANTS, *TWO_SIDED_VARIANTS)
SUBSECTION_NAMES = ("pairs", "train", "eval")
# Field -> the sub-sections that read it. `enabled` turns the stages on and changes no output;
# `seeds`, `variants` and the run settings (device, gradient checkpointing, the shared reference)
# say which runs train and where, not what one run computes, so the dpo-train stage declares
# them beside its `train` sub-section.
SUBSECTIONS: dict[str, tuple[str, ...]] = {
    "enabled": (),
    "model": ("train", "eval"),
    "variants": ("pairs",),
    "train_split": ("pairs",),
    "valid_split": ("pairs",),
    "valid_fraction": ("pairs",),
    "max_pairs": ("pairs",),
    "pair_seed": ("pairs",),
    "seeds": (),
    **dict.fromkeys(("beta", "learning_rate", "epochs", "batch_size", "grad_accum", "eval_steps", "lora_r", "lora_alpha",
                     "lora_dropout", "lora_layers", "target_modules", "max_length", "max_prompt_length"), ("train",)),
    "shared_reference": (),
    "gradient_checkpointing": (),
    "device": ("eval",),
    "dtype": ("train", "eval"),
    "eval_split": ("pairs", "eval"),
    **dict.fromkeys(("eval_max_examples", "eval_n_samples", "temperature", "top_p", "max_new_tokens", "eval_batch_size",
                     "eval_seed", "eval_shared_batches"), ("eval",)),
}


@dataclass
class DPOConfig:
    """Preference pairs from the rewards, LoRA DPO training, and evaluation of the trained policies."""

    enabled: bool = doc("Run the DPO stages (dpo-pairs, dpo-train, dpo-eval). They run only when task.splits also "
                        "holds a split other than eval_split to give pairs: evaluation is on held-out prompts.", True)
    model: str | None = doc("Policy base model: preset name, hub id or local folder (null = generation.model).", None)
    variants: list[str] = doc("Reward variants to build pairs from and train on (rm, rm_d, rm_c, rm_*_expected; the "
                              "two-sided rm_d_deny, rm_c_deny take pairs from original and counterfactual prompts and "
                              "need the task's denial sentence, prompts/<task>_deny.txt).", factory=lambda: ["rm", "rm_d", "rm_c"])
    train_split: str | None = doc("Build split whose sampled examples give training pairs (null = every sampled example "
                                  "outside eval_split and valid_split).", None)
    valid_split: str | None = doc("Build split whose sampled examples give validation pairs (null = hold out "
                                  "valid_fraction of the training examples' pairs instead).", None)
    valid_fraction: float = doc("Share of pair examples held out for evaluation during training, in [0, 1); used "
                                "when valid_split is null.", 0.25)
    max_pairs: int | None = doc("Cap on examples giving pairs per variant (train + valid), picked by the seeded shuffle; "
                                "a two-sided variant's example gives up to two pairs (original and counterfactual "
                                "prompt); null = all.", 32)
    pair_seed: int = doc("Seed of the train/valid split and of the max_pairs subset.", 0)
    seeds: list[int] = doc("Training seeds; each variant is trained once per seed (paper: 3 seeds).", factory=lambda: [0])
    beta: float = doc("DPO temperature beta (strength of the KL anchor to the reference).", 0.1)
    learning_rate: float = doc("AdamW learning rate for the LoRA weights (TRL's 1e-6 default barely moves a LoRA).", 5e-5)
    epochs: float = doc("Training epochs over the train pairs.", 1.0)
    batch_size: int = doc("Pairs per device per step (train and eval).", 2)
    grad_accum: int = doc("Gradient accumulation steps.", 1)
    eval_steps: int | None = doc("Evaluate and checkpoint every this many optimizer steps (null = once per epoch).", None)
    lora_r: int = doc("LoRA rank.", 8)
    lora_alpha: int = doc("LoRA scaling alpha.", 16)
    lora_dropout: float = doc("LoRA dropout, in [0, 1).", 0.05)
    lora_layers: int | None = doc("LoRA only on the top N decoder layers (null = every layer, the paper's setting); "
                                  "backpropagation then stops below them, which makes a CPU step much cheaper.", None)
    target_modules: list[str] = doc("Module names that get LoRA adapters.", factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    max_length: int = doc("Maximum tokens of prompt + response; longer sequences are truncated at the end.", 1024)
    max_prompt_length: int = doc("Pairs whose prompt is longer than this many tokens are dropped (counted in the manifest).", 768)
    shared_reference: bool = doc("Compute the reference model's log-probabilities once per distinct (prompt, response) "
                                 "and reuse them across variants and seeds (false = TRL's default, a reference "
                                 "forward in every training step).", True)
    gradient_checkpointing: bool = doc("Recompute activations in the backward pass (saves GPU memory, slower).", False)
    device: Literal["auto", "cpu", "cuda"] = doc("auto = cuda when available, else cpu.", "auto")
    dtype: Literal["auto", "float32", "bfloat16"] = doc("Training precision; auto = bf16 on CUDA or on a CPU with native "
                                                        "bf16 (avx512_bf16/amx_bf16: autocast over fp32 weights), "
                                                        "else fp32.", "auto")
    eval_split: str = doc("Build split whose original and counterfactual prompts the trained policies answer; "
                          "held out: it must give no pairs.", "test")
    eval_max_examples: int | None = doc("Cap on evaluated examples (first ones by id; null = all).", None)
    eval_n_samples: int = doc("Samples per prompt for the majority vote (paper: 16; 0 = greedy only); a greedy answer is always added.", 4)
    temperature: float = doc("Sampling temperature of the majority-vote samples, > 0.", 0.8)
    top_p: float = doc("Nucleus mass of the majority-vote samples, in (0, 1].", 0.95)
    max_new_tokens: int = doc("Maximum new tokens per evaluation response.", 160)
    eval_batch_size: int = doc("Sequences per forward pass during evaluation.", 16)
    eval_seed: int = doc("Base seed of the evaluation samples.", 0)
    eval_shared_batches: bool = doc("Decode the base policy and every adapter in shared batches (the base loaded "
                                    "once, adapters unmerged, eval_batch_size sequences per policy in each forward); "
                                    "false = one policy at a time with its adapter merged into the weights.", True)

    def __post_init__(self) -> None:
        check(bool(self.variants), "variants", "must list at least one reward variant")
        for v in self.variants:
            check(v in DPO_VARIANTS, "variants", f"unknown variant {v!r}; choose from {', '.join(DPO_VARIANTS)}")
        check(len(set(self.variants)) == len(self.variants), "variants", "must not repeat a variant")
        check(0 <= self.valid_fraction < 1, "valid_fraction", f"must be in [0, 1), got {self.valid_fraction}")
        check(self.max_pairs is None or self.max_pairs >= 1, "max_pairs", "must be >= 1 or null")
        check(bool(self.seeds) and len(set(self.seeds)) == len(self.seeds), "seeds", "must be a non-empty list without repeats")
        check(self.beta > 0, "beta", f"must be > 0, got {self.beta}")
        check(self.learning_rate > 0, "learning_rate", f"must be > 0, got {self.learning_rate}")
        check(self.epochs > 0, "epochs", f"must be > 0, got {self.epochs}")
        for name in ("batch_size", "grad_accum", "lora_r", "lora_alpha", "max_length", "max_prompt_length",
                     "max_new_tokens", "eval_batch_size"):
            check(getattr(self, name) >= 1, name, f"must be >= 1, got {getattr(self, name)}")
        check(self.eval_n_samples >= 0, "eval_n_samples", f"must be >= 0, got {self.eval_n_samples}")
        check(self.eval_steps is None or self.eval_steps >= 1, "eval_steps", "must be >= 1 or null")
        check(self.eval_max_examples is None or self.eval_max_examples >= 1, "eval_max_examples", "must be >= 1 or null")
        check(0 <= self.lora_dropout < 1, "lora_dropout", f"must be in [0, 1), got {self.lora_dropout}")
        check(bool(self.target_modules), "target_modules", "must list at least one module name")
        check(self.lora_layers is None or self.lora_layers >= 1, "lora_layers", "must be >= 1 or null")
        check(self.max_prompt_length < self.max_length, "max_prompt_length", "must be smaller than max_length")
        check(self.eval_split not in (self.train_split, self.valid_split), "eval_split",
              f"{self.eval_split!r} also gives pairs (train_split/valid_split): evaluation must be on held-out prompts")
        check(self.valid_split is None or self.valid_split != self.train_split, "valid_split", "must differ from train_split")
        check(self.temperature > 0, "temperature", f"must be > 0 (greedy answers are added anyway), got {self.temperature}")
        check(0 < self.top_p <= 1, "top_p", f"must be in (0, 1], got {self.top_p}")

    def subsection(self, name: str) -> dict[str, Any]:
        """The fields of sub-section `name` (pairs, train or eval) and their values.

        >>> sorted(DPOConfig().subsection("pairs"))
        ['eval_split', 'max_pairs', 'pair_seed', 'train_split', 'valid_fraction', 'valid_split', 'variants']
        """
        if name not in SUBSECTION_NAMES:
            raise ValueError(f"unknown DPO sub-section {name!r}; choose from {', '.join(SUBSECTION_NAMES)}")
        unplaced = [f.name for f in fields(self) if f.name not in SUBSECTIONS]
        if unplaced:  # a new field must say which stages read it before any key is computed
            raise AssertionError(f"DPOConfig fields without a sub-section in SUBSECTIONS: {unplaced}")
        return {f.name: getattr(self, f.name) for f in fields(self) if name in SUBSECTIONS[f.name]}

    def declared(self, names: tuple[str, ...]) -> dict[str, Any]:
        """What a stage that declares `names` (sub-sections or single fields) reads of this section."""
        return {n: self.subsection(n) if n in SUBSECTION_NAMES else getattr(self, n) for n in names}
