"""Measurement scripts: `alignment bench` timings (`bench`, `device`, `greedy`, `shapes`,
`inputs`, `judge_speed`) and the cluster-cost projection (`cluster/`) and the package's own
map (`house`: import loops, depth, sizes). Nothing in the pipeline imports them; they import the
pipeline's parts to time them."""
