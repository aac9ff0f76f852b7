"""`alignment bon CONFIG --out DIR`: best-of-N curves and the acknowledgment comparison.

Reads `generate/`, `score/` and `ack/`, writes `bon/bon.csv` (and `data.parquet`; its
`headline` column marks the N of the headline, `alignment.analysis.bon.headline_n`),
`bon/per_example.parquet`, `bon/ack_comparison.csv`, `bon/ack_control.csv` (original vs
counterfactual acknowledgment of the picks, the control) and `bon/bon.png` (`alignment.analysis.bon`).
A two-sided variant listed in `bon.variants` needs the task's denial sentence (one clear line
otherwise); under the default list it is left out, with a log line, where the task has none.
"""

from __future__ import annotations

import pandas as pd

from alignment.analysis.bon import (
    BonConfig,
    ack_comparison,
    ack_control_table,
    headline_n,
    per_example,
    plot,
    summarize,
)
from alignment.augment.strategies import ALL_VARIANTS, TWO_SIDED_VARIANTS, check_two_sided
from alignment.context import Context
from alignment.store import write_parquet, write_text


def bon_table(ctx: Context) -> pd.DataFrame:
    """One row per response: its correctness, validity, rewards and acknowledgment."""
    keys = ["example_id", "variant", "sample"]
    resp = ctx.read("generate")[keys + ["correct", "valid"]]
    return resp.merge(ctx.read("score"), on=keys).merge(ctx.read("ack")[keys + ["ack"]], on=keys)


def bon(cfg: BonConfig, ctx: Context) -> dict[str, int]:
    table = bon_table(ctx)
    # The default list names every variant; only a list the user wrote asks for the two-sided ones.
    check_two_sided([] if cfg.variants == list(ALL_VARIANTS) else cfg.variants, table, ctx.task.deny_suffix, "bon.variants")
    absent = [v for v in TWO_SIDED_VARIANTS if v in cfg.variants and v not in table.columns]
    if absent:
        ctx.log(f"[bon] {', '.join(absent)} left out: the score has no denial reward (the task has no denial sentence)")
    per = per_example(table, cfg)
    df = summarize(per)
    # The N that the report's headline and `alignment sweep` compare at, marked in the outputs.
    sampled = table[table["sample"] >= 0].groupby(["example_id", "variant"]).size()
    n_head = headline_n(cfg.ns, int(sampled.min()) if len(sampled) else 0, cfg.headline_n)
    per["headline"], df["headline"] = per["N"] == n_head, df["N"] == n_head
    folder = ctx.folder("bon")
    write_text(folder / "bon.csv", df.to_csv(index=False))
    write_parquet(folder / "data.parquet", df)
    write_parquet(folder / "per_example.parquet", per)
    write_text(folder / "ack_comparison.csv", ack_comparison(per).to_csv(index=False))
    write_text(folder / "ack_control.csv", ack_control_table(per).to_csv(index=False))
    plot(df, ctx.task.metric_label, folder / "bon.png")
    return {"rows": len(df), "headline_n": n_head}
