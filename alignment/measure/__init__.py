"""Measurement scripts: `alignment bench` timings (`bench`, `device`, `greedy`, `shapes`,
`inputs`, `judge_speed`) and the cluster-cost projection (`cluster_projection*`). Nothing in the
pipeline imports them; they import the pipeline's parts to time them."""
