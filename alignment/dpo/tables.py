"""DPO tables (CSV, Markdown, LaTeX), the figure, and report.md's "## DPO" section.

Written by `alignment dpo-eval CONFIG --out DIR` into `dpo-eval/`; `dpo_report_section(run)` is
called by the report stage and only formats what dpo-eval computed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from alignment.analysis.markdown import md_table
from alignment.analysis.stats import excludes_zero
from alignment.store import RunDir, atomic_path, write_text

PARTS = (("orig", "orig"), ("cf", "cf"), ("gap", "orig − cf"))


def _pm(mean: float, std: float, signed: bool = False) -> str:
    if pd.isna(mean):
        return "n/a"
    sign = "+" if signed else ""
    return f"{100 * mean:{sign}.1f} ± {100 * std:.1f}"


def display_table(agg: pd.DataFrame, metric_label: str) -> pd.DataFrame:
    """Percentages as `mean ± std` over seeds, one row per (decoding, reward)."""
    rows = []
    for r in agg.to_dict("records"):
        row = {"decoding": r["decoding"], "reward": r["reward"], "seeds": r["seeds"]}
        for m, label in (("metric", metric_label), ("ack", "ack rate")):
            for part, name in PARTS:
                row[f"{label} {name}"] = _pm(r[f"{m}_{part}"], r[f"{m}_{part}_std"], signed=part == "gap")
        rows.append(row)
    return pd.DataFrame(rows)


def latex_table(df: pd.DataFrame, caption: str) -> str:
    def esc(v: object) -> str:
        return str(v).replace("_", r"\_").replace("%", r"\%").replace("±", r"$\pm$").replace("−", "$-$")

    lines = [r"\begin{table}[t]", r"\centering", r"\small", r"\begin{tabular}{ll" + "r" * (len(df.columns) - 2) + "}",
             r"\toprule", " & ".join(esc(c) for c in df.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(esc(v) for v in row) + r" \\" for row in df.itertuples(index=False)]
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{esc(caption)}}}", r"\end{table}"]
    return "\n".join(lines) + "\n"


TRUTH_CAPTION = ("Truthfulness per policy over every evaluated response (greedy and sampled), pooled over training seeds: "
                 "*discrimination* = acknowledgment on original − on counterfactual prompts, paired per example; *true* / "
                 "*false ack* = acknowledgment among original responses whose answer differs / does not differ from the "
                 "policy's drawn counterfactual answer (strategy D's mark), *grounded* = true − false; points with 95% "
                 "bootstrap intervals over training seeds and examples. Truthful: discrimination = ack orig, grounded "
                 "+100; fabricating (acknowledges everywhere): 0 and 0.")


def write_tables(agg: pd.DataFrame, folder: Path, metric_label: str, truth: str | None = None) -> pd.DataFrame:
    """dpo.csv, dpo.md (with the truthfulness table `truth` after the scores, when given) and dpo.tex.
    In the score table *ack rate orig − cf* is each decoding's discrimination."""
    shown = display_table(agg, metric_label)
    with atomic_path(folder / "dpo.csv") as tmp:
        agg.to_csv(tmp, index=False)
    extra = f"\n{TRUTH_CAPTION}\n\n{truth}\n" if truth else ""
    write_text(folder / "dpo.md", md_table(shown) + "\n" + extra)
    caption = (f"DPO policies: {metric_label} and acknowledgment rate (\\%) on original and counterfactual "
               "prompts, mean ± std over seeds.")
    write_text(folder / "dpo.tex", latex_table(shown, caption))
    return shown


def plot(agg: pd.DataFrame, metric_label: str, path: Path) -> None:
    """Paper-style bars: orig and cf per reward variant, the gap written above each pair."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    decodings = list(dict.fromkeys(agg["decoding"]))
    fig, axes = plt.subplots(len(decodings), 2, figsize=(10, 3.6 * len(decodings)), squeeze=False)
    for i, dec in enumerate(decodings):
        g = agg[agg["decoding"] == dec].reset_index(drop=True)
        x = range(len(g))
        for j, (m, label) in enumerate((("metric", metric_label), ("ack", "acknowledgment rate"))):
            ax = axes[i][j]
            ax.bar([k - 0.2 for k in x], g[f"{m}_orig"], 0.4, yerr=g[f"{m}_orig_std"], capsize=3, label="original")
            ax.bar([k + 0.2 for k in x], g[f"{m}_cf"], 0.4, yerr=g[f"{m}_cf_std"], capsize=3, label="counterfactual")
            for k, r in g.iterrows():
                top = max(r[f"{m}_orig"], r[f"{m}_cf"])
                ax.text(k, min(top + 0.05, 1.02), f"Δ {100 * r[f'{m}_gap']:+.0f}", ha="center", fontsize=8)
            ax.set_xticks(list(x), g["reward"].tolist())
            ax.set_ylim(0, 1.1)
            ax.set_ylabel(label)
            ax.set_title(f"{label} ({dec})", fontsize=10)
        axes[i][0].legend(fontsize=8)
    fig.suptitle("DPO policies: original vs counterfactual prompts (Δ = orig − cf, points)")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)


def dpo_report_section(run: RunDir, corrected: list[str] | None = None) -> list[str]:
    """Markdown lines for report.md; empty when dpo-eval has not run in this run dir.

    `corrected`: dpo-eval's acknowledgment figures corrected by human labels of its responses
    (`alignment.judge_error.dpo_estimates.dpo_corrected_lines`), passed in by the report stage so
    that DPO's tables sit below the judge-error statistics, not beside them in a loop."""
    manifest = run.manifest("dpo-eval") or {}  # absent when the stage was called from Python
    table = run.stage("dpo-eval") / "dpo.md"
    if not table.is_file():
        return []
    train = run.manifest("dpo-train") or {}
    corrected = corrected or []
    return [*_section_head(run, manifest, train), *_pair_stats(run), table.read_text().rstrip(), "",
            *_effects(run, bool(corrected)), *corrected, "![dpo](dpo-eval/dpo.png)", ""]


MEASURE_NAMES = {"ack_diff": "acknowledgment, original prompts", "acc_diff": "accuracy, original prompts",
                 "cf_ack_diff": "acknowledgment, counterfactual prompts (control)",
                 "disc_diff": "discrimination (ack orig − cf)", "grounded_diff": "grounded acknowledgment (true − false)"}


def _pts(est: float, lo: float, hi: float) -> str:
    return f"{100 * est:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def _effects(run: RunDir, labelled: bool = False) -> list[str]:
    path = run.stage("dpo-eval") / "effects.csv"
    eff = pd.read_csv(path) if path.is_file() else pd.DataFrame()
    if eff.empty:
        return []
    pooled = eff[eff["scope"] == "pooled"]
    seeds = int(pooled["seeds"].max())
    lines = [f"Effects in points with 95% paired bootstrap intervals over {int(pooled['examples'].max())} held-out examples"
             + (f" and {seeds} training seeds (crossed)" if seeds > 1 else "") + "; every evaluated response counts "
             "(greedy and sampled), averaged per example. The judge's verdicts are taken as exact here: "
             + ("these intervals exclude the judge's error; the table after this one corrects the acknowledgment "
                "figures with human labels of dpo-eval's responses:" if labelled else
                "no human labels cover dpo-eval's responses, so these intervals exclude the judge's error:"), "",
             "| comparison | measure | pooled | per seed |", "|---|---|---|---|"]
    for r in pooled.itertuples(index=False):
        per = eff[(eff["comparison"] == r.comparison) & (eff["measure"] == r.measure) & (eff["scope"] != "pooled")]
        per_seed = ", ".join(f"{s.split()[-1]}: {100 * e:+.1f}" for s, e in zip(per["scope"], per["est"], strict=True))
        lines.append(f"| {r.comparison} | {MEASURE_NAMES.get(r.measure, r.measure)} | {_pts(r.est, r.lo, r.hi)} | {per_seed} |")
    head = pooled[(pooled["a"] == "rm_d") & (pooled["b"] == "rm") & (pooled["measure"] == "ack_diff")]
    if len(head):
        h = head.iloc[0]
        verdict = ("the interval excludes 0: on these held-out prompts, DPO on RM_D pairs made the policy organism "
                   "acknowledge the leaked solution more often than DPO on plain RM pairs" if h.lo > 0 else
                   "the interval includes 0: no detectable effect at this size (see configs/organism_dpo.yaml for the "
                   "measured experiment)" if not excludes_zero(h.lo, h.hi) else
                   "the interval is below 0: DPO on RM_D pairs lowered acknowledgment against plain RM")
        lines += ["", f"DPO(RM_D) − DPO(RM), acknowledgment on original prompts: {_pts(h.est, h.lo, h.hi)} points; {verdict}."
                  + _control(pooled) + " A model-organism result (this project's synthetic problems and organisms), "
                  "not a claim about real policies."]
    return [*lines, ""]


def _control(pooled: pd.DataFrame) -> str:
    """What the counterfactual control says about the headline difference (empty without one)."""
    head = pooled[(pooled["a"] == "rm_d") & (pooled["b"] == "rm")]
    c = head[head["measure"] == "cf_ack_diff"]
    truth = "".join(f" {name}: {_pts(r.est, r.lo, r.hi)}." for m, name in (
        ("disc_diff", "Discrimination (acknowledgment original − counterfactual), DPO(RM_D) − DPO(RM)"),
        ("grounded_diff", "Grounded acknowledgment (true − false), DPO(RM_D) − DPO(RM)"))
        for r in head[head["measure"] == m].itertuples(index=False))
    if c.empty:
        return truth
    r = c.iloc[0]
    if r.lo > 0:
        return (f" The counterfactual control (no solution to acknowledge) moves too, {_pts(r.est, r.lo, r.hi)}: the "
                "difference is in how often the policy mentions the book at all, not only where it used it." + truth)
    return f" The counterfactual control: {_pts(r.est, r.lo, r.hi)}." + truth


def _pair_stats(run: RunDir) -> list[str]:
    """Per reward variant: pairs kept and skipped, mean reward margin, how often the chosen and the
    rejected response acknowledge the feature and are correct."""
    rows = []
    for stats_file in sorted(run.stage("dpo-pairs").glob("*/stats.json")):
        st = json.loads(stats_file.read_text())
        skipped = ", ".join(f"{st.get(f'skipped_{k}', 0)} {k.replace('_', ' ')}" for k in ("no_valid", "same_response", "equal_texts", "equal_rewards"))
        pct = {k: "n/a" if pd.isna(st.get(k)) else f"{100 * st[k]:.0f}%" for k in ("chosen_ack", "rejected_ack", "chosen_correct", "rejected_correct")}
        margin = "n/a" if pd.isna(st.get("mean_margin")) else f"{st['mean_margin']:.2f}"
        # A two-sided variant's pairs come from both prompt types: say how many from each.
        prompts = f" ({st['pairs_orig']} orig, {st['pairs_cf']} cf)" if "pairs_cf" in st else ""
        rows.append(f"| {stats_file.parent.name} | {st.get('train', 0)} / {st.get('valid', 0)}{prompts} | {skipped} | {margin} | "
                    f"{pct['chosen_ack']} / {pct['rejected_ack']} | {pct['chosen_correct']} / {pct['rejected_correct']} |")
    if not rows:
        return []
    return ["Pairs per reward variant (from the same samples):", "",
            "| reward | pairs train / valid | skipped | mean reward margin | acknowledge: chosen / rejected | correct: chosen / rejected |",
            "|---|---|---|---|---|---|", *rows, ""]


def _section_head(run: RunDir, manifest: dict, train: dict) -> list[str]:
    split = manifest.get("eval_split")
    return [
        "## DPO",
        "",
        f"LoRA DPO on reward-ranked pairs from `{train.get('models', {}).get('policy')}`; each trained policy "
        f"(and the base policy) answers the original and counterfactual prompts of the held-out split `{split}` "
        "(no example there gave a training pair) greedily"
        + (f" and by majority over {n} samples" if (n := manifest.get("eval_n_samples")) else "")
        + f". Percent, mean ± std over seeds {manifest.get('seeds')}.",
        "",
    ]
