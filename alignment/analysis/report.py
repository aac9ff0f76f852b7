"""The sections of `report.md`, formatting numbers computed by other stages.

`alignment report CONFIG --out runs/<name>` (`alignment.stages.report`) reads the artifacts of build, generate, attribute,
score, ack and bon (and DPO ones when present) and writes `report.md` with the headline table
and links to the figures. Intervals come from `alignment.analysis.stats`; nothing is computed here that a
stage or a statistics function does not already define.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.analysis.bon import marked_headline
from alignment.analysis.markdown import ci as _ci
from alignment.analysis.markdown import md_table as _md_table
from alignment.analysis.markdown import pct as _pct
from alignment.analysis.stats import (
    ack_control,
    control_sentence,
    excludes_zero,
    grounded,
    holm,
    paired_bootstrap,
    wilson_interval,
)
from alignment.augment.strategies import BY_VARIANT, LABELS, ORDER, PLAIN, augmented_share
from alignment.config import check, doc
from alignment.context import Context
from alignment.store import write_text


@dataclass
class ReportConfig:
    """What the report reads beyond the stages' artifacts."""

    labels: str | None = doc(
        "JSONL of human labels (ack_label) for this run's responses; the report checks the run's judge "
        "against them. Default: RUN/judge_sample/sample_labelled.jsonl, else RUN/judge_sample/sample.jsonl "
        "(alignment.judge_error.run_labels).", None)

    def __post_init__(self) -> None:
        check(self.labels is None or (bool(self.labels.strip()) and "\0" not in self.labels), "report.labels",
              "must be a file path (or null for the default)")


def policy_section(resp: pd.DataFrame, metric: str) -> list[str]:
    """Original vs counterfactual over all sampled responses, with the paired gap's interval."""
    s = resp[resp["sample"] >= 0]
    rows = []
    for v in ("orig", "cf"):
        g = s[s["variant"] == v]
        lo, hi = wilson_interval(int(g["correct"].sum()), len(g))
        rows.append({"prompt": v, "responses": len(g), "valid": _pct(g["valid"].mean()), metric: _pct(g["correct"].mean()), "95% CI": _ci(lo, hi)})
    paired = s[s["variant"] == "orig"].merge(s[s["variant"] == "cf"], on=["example_id", "sample"], suffixes=("_o", "_c"))
    out = ["## Policy: original vs counterfactual prompts", "", _md_table(pd.DataFrame(rows)), ""]
    if len(paired):
        gap = paired_bootstrap(
            paired["correct_o"].astype(float).tolist(),
            paired["correct_c"].astype(float).tolist(),
            paired["example_id"].tolist(),
        )
        out += [
            f"Gap orig − cf in {metric}: **{100 * gap.estimate:+.1f} points**, 95% CI "
            f"{_ci(gap.low, gap.high)} (bootstrap over examples, {paired['example_id'].nunique()} examples).",
            "",
        ]
    return out


def organism_note(models: list[str | None]) -> list[str]:
    """Name model organisms for what they are, so nobody reads their numbers as real models'."""
    from alignment.organism import DESCRIPTIONS

    named = [m for m in models if m in DESCRIPTIONS]
    if not named:
        return []
    lines = ["**Model organisms.** " + " ".join(f"`{m}` is {DESCRIPTIONS[m]}." for m in named)]
    return [*lines, "The numbers below describe these organisms; they say nothing about how often real "
            "policies or reward models behave this way.", ""]


def _pts(est: float, lo: float, hi: float) -> str:
    return "n/a" if pd.isna(est) else f"{100 * est:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def truth_cells(row: Any) -> dict[str, str]:
    """Discrimination and grounded acknowledgment of one `ack_comparison.csv` row, in points with
    their 95% intervals (n/a where the run lacks counterfactual prompts or attribution)."""
    get = (lambda k: getattr(row, k, float("nan"))) if row is not None else (lambda k: float("nan"))
    return {"discrimination": _pts(get("disc"), get("disc_low"), get("disc_high")),
            "grounded (true − false ack)": _pts(get("grounded"), get("grounded_low"), get("grounded_high"))}


TRUTH_NOTE = ("*Discrimination*: acknowledgment on original minus counterfactual prompts (the feature is absent "
              "there), paired per example; *grounded*: acknowledgment rate among responses whose answer the "
              "attribution step (strategy D) marks as caused by the feature minus among the others. A perfectly "
              "truthful policy scores its acknowledgment rate and +100; one that claims the feature everywhere "
              "scores 0 and 0 (`alignment.stats`, docs/pipeline.md). Points, 95% bootstrap intervals over examples.")


def headline(bon: pd.DataFrame, attrib: pd.DataFrame, metric: str, cmp: pd.DataFrame | None = None) -> list[str]:
    n_max = marked_headline(bon)
    top = bon[(bon["N"] == n_max) & (bon["prompt"] == "orig")]
    sampled = attrib[attrib["sample"] >= 0]
    truth = {} if cmp is None or "disc" not in cmp else {r.reward: r for r in cmp[cmp["N"] == n_max].itertuples(index=False)}
    rows = []
    for r in top.itertuples(index=False):
        rows.append(
            {
                "reward": r.reward,
                f"{metric} (BoN-{n_max})": f"{_pct(r.metric)} ± {_pct(r.metric_se)}",
                f"ack rate (BoN-{n_max})": f"{_pct(r.ack)} ± {_pct(r.ack_se)}",
                **truth_cells(truth.get(r.reward)),
                "augmented share": _pct(augmented_share(sampled, r.reward)),
            }
        )
    return [
        "## Headline: best-of-N on original prompts",
        "",
        _md_table(pd.DataFrame(rows)),
        "",
        f"BoN-{n_max}: the expected pick over every {n_max}-subset of each prompt's samples (`alignment.analysis.bon`). "
        "± is one standard error over examples. *Augmented share*: share of sampled original "
        "responses whose reward used the acknowledgment-appended score (D or C fired; the "
        "expected variants show the mean weight p). " + TRUTH_NOTE,
        "",
    ]


def _diff(r: Any, holm_p: float) -> str:
    """A paired difference with its interval, its p and Holm-adjusted p; flagged when the
    interval includes 0."""
    flag = "" if excludes_zero(r.diff_low, r.diff_high) else " (includes 0)"
    return f"{100 * r.diff:+.1f} pts {_ci(r.diff_low, r.diff_high)}, p = {r.diff_p:.3f} (Holm {holm_p:.3f}){flag}"


def ack_section(cmp: pd.DataFrame, variants: tuple[str, ...] = ("rm", "rm_d", "rm_c", "rm_d_deny", "rm_c_deny")) -> list[str]:
    """Side by side: acknowledgment rate of the best-of-N pick under RM, RM_D and RM_C (and the
    two-sided RM_D± / RM_C± where the run has them), and the paired differences from RM, all with
    95% intervals (computed by the bon stage)."""
    cmp = cmp[cmp["reward"].isin(variants)]
    if cmp.empty:
        return []
    two_sided = [v for v in variants if BY_VARIANT[v].two_sided and v in set(cmp["reward"])]
    note = ("" if not two_sided else " " + "; ".join(f"{LABELS[v]} (`{v}`)" for v in two_sided)
            + ": two-sided, the one-sided reward where its flag fires, elsewhere (counterfactual prompts included) the "
              "lower of the plain score and the score with the task's denial appended.")
    # One family: every variant − rm comparison at every N shown.
    tested = cmp[(cmp["reward"] != variants[0]) & cmp["diff"].notna()]
    adjusted = dict(zip(zip(tested["N"], tested["reward"], strict=True), holm(tested["diff_p"].tolist()), strict=True))
    level, diff = [], []
    for n, g in cmp.groupby("N", sort=True):
        by = {r.reward: r for r in g.itertuples(index=False)}
        level.append({"N": n, **{v: f"{_pct(by[v].ack)} {_ci(by[v].ack_low, by[v].ack_high)}" for v in variants if v in by},
                      **{f"{v} discrimination": truth_cells(by[v])["discrimination"] for v in variants if v in by}})
        diff.append({"N": n, **{f"{v} − rm": _diff(by[v], adjusted[n, v]) for v in variants[1:] if (n, v) in adjusted}})
    return [
        "## Acknowledgment under best-of-N: RM vs RM_D / RM_C",
        "",
        "Share of best-of-N picks on original prompts whose reasoning admits the protected feature "
        f"(judge: see above), with 95% bootstrap intervals over examples ({int(cmp['examples'].max())} examples), and "
        "beside each its discrimination (original − counterfactual, points)." + note,
        "",
        _md_table(pd.DataFrame(level)),
        "",
        "Paired difference from plain RM (same examples, same N-subsets; bootstrap over examples; "
        "Holm adjusts the p-values over every comparison in this table):",
        "",
        _md_table(pd.DataFrame(diff)),
        "",
    ]


def bon_section(bon: pd.DataFrame, metric: str, cmp: pd.DataFrame | None = None) -> list[str]:
    table = bon.assign(
        **{metric: bon["metric"].map(_pct), "± se": bon["metric_se"].map(_pct), "ack": bon["ack"].map(_pct), "ack ± se": bon["ack_se"].map(_pct)}
    )
    truth = {} if cmp is None or "disc" not in cmp else {(r.N, r.reward): r for r in cmp.itertuples(index=False)}
    cells = [truth_cells(truth.get((n, r))) if p == "orig" else {k: "" for k in truth_cells(None)}
             for n, p, r in zip(bon["N"], bon["prompt"], bon["reward"], strict=True)]
    table = pd.concat([table.reset_index(drop=True), pd.DataFrame(cells, columns=list(truth_cells(None)))], axis=1)
    table = table[["N", "prompt", "reward", metric, "± se", "ack", "ack ± se", *truth_cells(None), "examples"]]
    return ["## Best-of-N", "", "![best-of-N](bon/bon.png)", "", _md_table(table), "",
            "Discrimination and grounded acknowledgment of the picks are on the original-prompt rows (they compare "
            "with the counterfactual row).", ""]


def control_section(run: Any) -> list[str]:
    """The built-in control: every response's acknowledgment rate on original prompts against
    the counterfactual ones, where the protected feature is absent."""
    if not (run.stage("ack") / "data.parquet").is_file():
        return []
    df = run.read("ack")
    if not {"orig", "cf"} <= set(df["variant"]):
        return []
    r = ack_control(df["example_id"].tolist(), df["variant"].tolist(), df["ack"].tolist())
    return [
        "## Acknowledgment against the counterfactual control",
        "",
        "On counterfactual prompts the protected feature is absent, so an acknowledgment there is a "
        "judge false alarm or a claimed source the policy did not have. All responses: "
        + control_sentence(r) + f" The difference is the policy's discrimination ({_pts(r.difference.estimate, r.difference.low, r.difference.high)} points).",
        "",
        *grounded_lines(run, df),
        *pick_control_lines(run),
        "Every N: `bon/ack_control.csv`.",
        "",
    ]


def grounded_lines(run: Any, ack: pd.DataFrame) -> list[str]:
    """Grounded acknowledgment over every sampled and greedy original response: the rate among
    those whose answer strategy D marks as caused by the feature, among the others, and the
    difference (`alignment.stats.grounded`); none without the attribute stage."""
    if not (run.stage("attribute") / "data.parquet").is_file():
        return []
    keys = ["example_id", "sample"]
    rows = run.read("attribute")[[*keys, "d"]].merge(ack[ack["variant"] == "orig"][[*keys, "ack"]], on=keys)
    if rows.empty:
        return []
    g = grounded(rows["example_id"].tolist(), rows["ack"].astype(float).tolist(), rows["d"].astype(float).tolist())
    return [f"Grounded acknowledgment (all original responses): {_pct(g.true.estimate)} {_ci(g.true.low, g.true.high)} "
            f"of the {int(g.caused)} responses whose answer strategy D marks as caused by the feature acknowledge it "
            f"(true acknowledgment), {_pct(g.false.estimate)} {_ci(g.false.low, g.false.high)} of the other "
            f"{int(g.responses - g.caused)} (false acknowledgment): difference {_pts(g.difference.estimate, g.difference.low, g.difference.high)} "
            "points (truthful +100, fabricating 0; 95% bootstrap over examples).", ""]


def pick_control_lines(run: Any) -> list[str]:
    """The same comparison for the best-of-N picks at the headline N, one line per reward variant.
    Only a two-sided strategy scores counterfactual prompts; under every other variant the
    counterfactual pick is the plain reward's, so "the original rate exceeds the control" would
    hold by construction there: the verdict is given for two-sided strategies only, and a note
    says so once."""
    path = run.stage("bon") / "ack_control.csv"
    if not path.is_file() or not (run.stage("bon") / "data.parquet").is_file():
        return []
    ctl = pd.read_csv(path)
    n = marked_headline(run.read("bon"))
    out = [f"Best-of-{n} picks (the headline N):", ""]
    one_sided = []
    at_n = sorted(ctl[ctl["N"] == n].itertuples(index=False), key=lambda r: ORDER.get(r.reward, len(ORDER)))
    for r in at_n:  # in the strategy table's order
        strategy = BY_VARIANT.get(r.reward)
        two_sided = strategy is not None and strategy.two_sided
        if not two_sided and r.reward != PLAIN:
            one_sided.append(f"`{r.reward}`")
        verdict = "" if not two_sided else \
            ": the original rate exceeds the control" if r.exceeds_control else ": the original rate does **not** exceed the control"
        out.append(f"- under `{r.reward}`: original {_pct(r.ack_orig)} {_ci(r.ack_orig_low, r.ack_orig_high)}, counterfactual "
                   f"{_pct(r.ack_cf)} {_ci(r.ack_cf_low, r.ack_cf_high)}, original − counterfactual {100 * r.diff:+.1f} points "
                   f"{_ci(r.diff_low, r.diff_high)}{verdict}.")
    if len(out) == 2:
        return []
    if one_sided:
        out += ["", f"{', '.join(one_sided)} {'is a one-sided strategy' if len(one_sided) == 1 else 'are one-sided strategies'}: "
                "they never score counterfactual prompts, so their counterfactual pick is the plain reward's "
                f"(`{PLAIN}`) by construction, and an original rate above it is no finding."]
    return [*out, ""]


def write_report(ctx: Context, extra_sections: list[str] | None = None) -> Path:
    task, run = ctx.task, ctx.run
    metric = task.metric_label
    resp = ctx.read("generate")
    attrib, bon = ctx.read("attribute"), ctx.read("bon")
    judge = run.manifest("ack") or {}
    policy = (run.manifest("generate") or {}).get("models", {}).get("policy")
    reward = (run.manifest("score") or {}).get("models", {}).get("reward")
    lines = [
        f"# Report: {run.path.name}",
        "",
        f"Task **{task.name}**; metric: {metric}{task.metric_note}. Policy: `{policy}`; reward model: `{reward}`; "
        f"acknowledgment judge: `{judge.get('judge')}`.",
        "",
    ]
    cmp_path = run.stage("bon") / "ack_comparison.csv"
    cmp = pd.read_csv(cmp_path) if cmp_path.is_file() else pd.DataFrame(columns=["reward"])
    lines += organism_note([policy, reward])
    lines += control_section(run)
    lines += headline(bon, attrib, metric, cmp) + policy_section(resp, metric) + ack_section(cmp) + bon_section(bon, metric, cmp)
    lines += extra_sections or []
    path = run.path / "report.md"
    write_text(path, "\n".join(lines) + "\n")
    return path


def _one_line(text: str, limit: int = 200) -> str:
    """Whitespace collapsed, backticks and pipes neutralised, cut at `limit` characters.

    >>> _one_line("a  `b`\\n| c", 8)
    "a 'b' /…"
    """
    flat = " ".join(str(text).split()).replace("`", "'").replace("|", "/")
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def labels_section(check: Any, judge: str | None) -> list[str]:
    """The judge card against the run's human labels (`alignment.judge_error.run_labels.LabelCheck`)
    and every disagreement; one line when there are no labels."""
    out = ["## Judge against human labels", "", check.summary(), ""]
    card = check.card
    if card is None:
        return out
    low, high = card["accuracy_ci95"]
    kappa = "n/a (one class only)" if pd.isna(card["kappa"]) else f"{card['kappa']:.2f} [{card['kappa_ci95'][0]:.2f}, {card['kappa_ci95'][1]:.2f}]"
    ba = card["balanced_accuracy"]
    table = pd.DataFrame([{
        "labelled": card["n"], "human ack rate": _pct(card["base_rate"]), "judge accuracy": _pct(card["accuracy"]),
        "95% CI": _ci(low, high), "Cohen's kappa": kappa,
        "balanced accuracy": "n/a (one class only)" if pd.isna(ba) else f"{_pct(ba)} {_ci(*card['balanced_accuracy_ci95'])}",
        "always-majority baseline": f"{_pct(card['majority_baseline'])} ({card['majority_class']})",
        "disagreements": len(card["disagreements"])}])
    who = f"the judge `{judge}`" if judge else "the run's judge"
    out += [f"Verdicts of {who} as the ack stage stored them; 95% Wilson interval.", "", _md_table(table), ""]
    if check.stratified:
        out += ["The sample is stratified by prompt variant and verdict (equal allocation), so this is the accuracy "
                "on the labelled responses, not an estimate over all of the run's responses.", ""]
    if not card["disagreements"]:
        return [*out, "The judge agrees with every label.", ""]
    out += ["Every disagreement (full responses with the evidence highlighted: report.html, section *The judge against human labels*):", ""]
    text = dict(zip(check.rows[["example_id", "variant", "sample"]].astype(str).agg("/".join, axis=1), check.rows["text"], strict=True))
    out += [f"- `{d['id']}`: human **{'ack' if d['label'] else 'no-ack'}**, judge **{'ack' if d['judge'] else 'no-ack'}**; "
            f"evidence: `{_one_line(d['evidence'], 160)}`; response: \"{_one_line(text[d['id']])}\"" for d in card["disagreements"]]
    return [*out, ""]
