"""`alignment attribute CONFIG --out DIR`: strategy D and C flags and their expected variants.

Reads `generate/` (and `receipts/` when `attribution.receipts` is on), writes
`attribute/data.parquet`: one row per original response with `d`, `c`, `p_d`, `p_c`, the drawn
`cf_sample` (and `receipt`). See `alignment.augment.attribution` for the definitions.
"""

from __future__ import annotations

from alignment.augment.attribution import AttributionConfig, attach_receipts, attribute_responses
from alignment.context import Context
from alignment.store import write_parquet


def attribute(cfg: AttributionConfig, ctx: Context) -> dict[str, int]:
    df = attribute_responses(ctx.read("generate"), cfg)
    if cfg.receipts:
        df = attach_receipts(df, ctx.read("receipts", "responses.parquet"))
    write_parquet(ctx.folder("attribute") / "data.parquet", df)
    return {
        "responses": len(df),
        "d_fired": int(df["d"].sum()) if len(df) else 0,
        "c_fired": int(df["c"].sum()) if len(df) else 0,
    }
