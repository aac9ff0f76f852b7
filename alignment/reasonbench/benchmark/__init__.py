"""The ReasonBench benchmark itself: the generator, the rendering and the audit.

`clauses`, `policy` and `org` (the organisational stratum), `logic` (the logical stratum),
`cases` (units, cases, controls and their executed cubes), `quotas` and `generate` (the published
sizes, exact at every scale), `render` (prompt templates), `build` (`alignment reasonbench build`)
and `audit` (`alignment reasonbench audit`, which re-executes every row). Nothing here imports
the experiments.
"""
