"""`alignment ack CONFIG --out DIR`: the acknowledgment verdict of every response.

Reads `generate/`, writes `ack/data.parquet` (example_id, variant, sample, ack, ack_raw,
ack_parsed) with the configured judge (`judge.*`), on original and counterfactual responses
alike: the counterfactual rate is the control the original rate is read against.
"""

from __future__ import annotations

from alignment.context import Context
from alignment.errors import UserError
from alignment.judge import JudgeConfig, make_judge
from alignment.store import write_parquet


def judge_task(ctx: Context) -> str:
    """The judge definition that labels this task's responses (`Task.judge_as`)."""
    if ctx.task.judge_as is None:
        raise UserError(f"task {ctx.task.name}: no judge definition (Task.judge_as) to label its responses")
    return ctx.task.judge_as


def ack(cfg: JudgeConfig, ctx: Context) -> dict[str, int]:
    resp = ctx.read("generate")
    verdicts = make_judge(cfg).judge(judge_task(ctx), resp["text"].tolist())
    df = resp[["example_id", "variant", "sample"]].assign(
        ack=[v.ack for v in verdicts], ack_raw=[v.raw for v in verdicts], ack_parsed=[v.parsed for v in verdicts]
    )
    write_parquet(ctx.folder("ack") / "data.parquet", df)
    ctx.extra["judge"] = cfg.name
    counts = {"responses": len(df), "ack": int(df["ack"].sum()), "unparsed": int((~df["ack_parsed"]).sum())}
    # The built-in control: the same rate on counterfactual prompts, where the feature is absent.
    counts |= {f"ack_{v}": int(df.loc[df["variant"] == v, "ack"].sum()) for v in ("orig", "cf")}
    counts |= {f"responses_{v}": int((df["variant"] == v).sum()) for v in ("orig", "cf")}
    return counts
