"""The stages of a run, one module each, in pipeline order (`alignment run CONFIG`).

build → generate → (receipts) → attribute → score → ack → bon → dpo-pairs → dpo-train →
dpo-eval → report. Each module's stage function is `fn(section, ctx) -> counts`; the table, keys
and manifests are `alignment.runner`'s.
"""
