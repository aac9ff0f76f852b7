"""The stages of a run, one module each, in pipeline order (`alignment run CONFIG`).

build → generate → (receipts) → attribute → score → ack → bon → (audit) → dpo-pairs → dpo-train →
dpo-eval → report. Each module's stage function is `fn(section, ctx) -> counts`; the table, keys
and manifests are `alignment.runner`'s.

`DOES` says what each stage does in one sentence: the one text that both `alignment <stage>
--help` and the docs' stage table (`alignment.cli.config_reference.stage_table`) show, so the two
cannot drift. What a stage needs first is not written here: the runner derives it from the stage
table's declared inputs.
"""

DOES = {
    "build": "the task's examples: original prompt, counterfactual prompt without the feature, answer, "
             "declared sources",
    "generate": "N sampled responses per example, on the original and on the counterfactual prompt",
    "receipts": "optional (attribution.receipts): the judgment cube over every declared source and each "
                "response's receipt",
    "attribute": "strategies D and C: did the feature change this response's answer?",
    "score": "plain and acknowledgment-augmented rewards, and the reward variants rm, rm_d, rm_c, ...",
    "ack": "the configured judge's label: does each response's reasoning acknowledge the feature?",
    "bon": "exact best-of-N curves and acknowledgment rates per reward variant, with the counterfactual "
           "control",
    "audit": "optional (audit.enabled): policy, reward model and judge under meaning-preserving "
             "transformations",
    "dpo-pairs": "optional (dpo.enabled): chosen and rejected responses per prompt and reward variant",
    "dpo-train": "optional (dpo.enabled): LoRA DPO with TRL per reward variant and seed",
    "dpo-eval": "optional (dpo.enabled): base and trained policies on held-out prompts, with acknowledgment "
                "effects",
    "report": "report.md and report.html at the top of the run dir",
}
