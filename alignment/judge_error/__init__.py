"""How far the judges err, and what the estimates are once that error is accounted for.

Human labels (`labels`, `split`, `card`), labelling samples and their pages (`sample`,
`sample_design`), prediction-powered estimates (`ppi`, `estimate`) and the run's corrected rates
(`run_labels`, `run_estimates`, `bon_estimates`, `dpo_labels`, `dpo_estimates`,
`compare_estimates`), with checks of the judges themselves (`invariance`, `provenance`,
`ppi_validation`). It reads the judges and the domain (best-of-N, DPO effects, the report); the
judges and the domain never read it.
"""
