"""The paper's experiments on a ReasonBench build (`alignment run configs/reasonbench_*.yaml`).

`experiment_config` (the typed config), `targets` (what a model is asked to write and how it is
parsed), `baseline` and `learners` (majority, character TF-IDF, LoRA SFT in `sft`), `predict`,
`certify` (certification by execution), `outcomes` and `evaluate` (consistency, failure
accounting, selective acceptance, intervals), `tables` and `figures`, and `experiment`, which
runs them as stages. They read the benchmark (`alignment.reasonbench.benchmark`), never the other
way round.
"""
