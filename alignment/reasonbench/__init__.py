"""`alignment reasonbench build --out DIR` / `audit DIR` / `baseline DIR --kind K`: ReasonBench.

Executable policy and logic cases with exact counterfactual receipts (Method B of the design
brief): an organisational stratum of 45 typed policy clauses and a logical stratum of 800
positive-rule worlds, split by independent unit, with inverse, permutation and distractor
controls for every locked example, an audit that re-executes every row and checks every
organisational rule is well-formed, and majority / character TF-IDF baselines.

Two halves: `benchmark` generates, renders and audits the cases; `experiments` trains and
evaluates learners on a build (the paper's sections 6-7). `cli` registers the commands of both.
"""
