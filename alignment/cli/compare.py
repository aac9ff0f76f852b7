"""`alignment compare RUN_A RUN_B [--out DIR]`: two runs over the same examples, side by side.

Say two reward models, two judges or two policies run on the same examples. Every metric both
runs have is reduced to one value per example (policy metric, validity and acknowledgment rate
per prompt variant, with the discrimination orig − cf and the true and false acknowledgment rates
(among responses strategy D marks as caused by the feature, and the others); D and C firing;
each best-of-N pick's metric, acknowledgment and discrimination per N, prompt and reward
variant; every dpo-eval metric, whose ack gaps orig − cf are the policies' discrimination,
`alignment.dpo.compare`), and the difference A − B
gets a paired bootstrap over the shared examples (`alignment.analysis.stats.paired_bootstrap`). A shared
metric without per-example values (a dpo-eval that kept only per-seed scores) is shown as A, B
and A − B with the reason it has no interval. The examples where the runs disagree most (summed
absolute per-example differences) are listed. Writes `compare.md`, `compare.html` and
`compare.csv`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from alignment.analysis.stats import excludes_zero, paired_bootstrap
from alignment.dpo.compare import dpo_per_example, dpo_summary
from alignment.errors import UserError
from alignment.judge_error.compare_estimates import corrected_rows
from alignment.judge_error.run_estimates import compare_notes
from alignment.store import RunDir, read_parquet, write_text

TOP = 10


def _optional(path: Path) -> pd.DataFrame | None:
    return read_parquet(path) if path.is_file() else None


def _rates(df: pd.DataFrame, cols: dict[str, str], by_variant: bool) -> pd.DataFrame:
    """Per-example means of boolean columns, one column per (label, prompt variant)."""
    s = df[df["sample"] >= 0]
    out = []
    for col, label in cols.items():
        if col not in s.columns:
            continue
        groups = s.groupby(["example_id", "variant"]) if by_variant else s.groupby("example_id")
        m = groups[col].apply(lambda x: x.astype(float).mean())
        out.append(m.unstack("variant").rename(columns=lambda v, lab=label: f"{lab} ({v})") if by_variant else m.rename(label).to_frame())
    return pd.concat(out, axis=1) if out else pd.DataFrame()


def grounded_columns(ack: pd.DataFrame, attrib: pd.DataFrame) -> pd.DataFrame:
    """Per example over its sampled original responses: the acknowledgment rate among those whose
    answer strategy D marks as caused by the feature (true ack) and among the others (false ack);
    NaN where the example has none of that kind, so compare pairs only examples that have it."""
    keys = ["example_id", "sample"]
    rows = attrib[attrib["sample"] >= 0][[*keys, "d"]].merge(ack[ack["variant"] == "orig"][[*keys, "ack"]], on=keys)
    rows = rows.assign(ack=rows["ack"].astype(float), d=rows["d"].astype(bool))
    return pd.DataFrame({"true ack rate (caused, orig)": rows[rows["d"]].groupby("example_id")["ack"].mean(),
                         "false ack rate (not caused, orig)": rows[~rows["d"]].groupby("example_id")["ack"].mean()})


def per_example_metrics(path: Path) -> pd.DataFrame:
    """One row per example, one column per metric this run has (values in [0, 1])."""
    run = RunDir(path)
    if not run.path.is_dir():
        raise UserError(f"run dir not found: {run.path}")
    gen = run.stage("generate") / "data.parquet"
    if not gen.is_file():
        raise UserError(f"{run.path}: missing artifact generate/data.parquet (run `alignment run` on it first)")
    resp = read_parquet(gen)
    parts = [_rates(resp, {"correct": "metric", "valid": "valid"}, True)]
    ack = _optional(run.stage("ack") / "data.parquet")
    if ack is not None:
        parts.append(rates := _rates(ack, {"ack": "ack rate"}, True))
        if {"ack rate (orig)", "ack rate (cf)"} <= set(rates.columns):
            parts.append((rates["ack rate (orig)"] - rates["ack rate (cf)"]).rename("discrimination").to_frame())
    if (attrib := _optional(run.stage("attribute") / "data.parquet")) is not None:
        parts.append(_rates(attrib, {"d": "D fired", "c": "C fired"}, False))
        if ack is not None:
            parts.append(grounded_columns(ack, attrib))
    if (per := _optional(run.stage("bon") / "per_example.parquet")) is not None:
        for value, label in (("metric", "metric"), ("ack", "ack")):
            wide = per.pivot_table(index="example_id", columns=["N", "prompt", "reward"], values=value)
            wide.columns = [f"BoN-{n} {label} ({p}, {r})" for n, p, r in wide.columns]
            parts.append(wide)
        ack_wide = per.pivot_table(index="example_id", columns=["N", "reward", "prompt"], values="ack")
        if "cf" in set(per["prompt"]):
            disc = {f"BoN-{n} discrimination ({r})": ack_wide[(n, r, "orig")] - ack_wide[(n, r, "cf")]
                    for n, r, p in ack_wide.columns if p == "orig" and (n, r, "cf") in ack_wide.columns}
            parts.append(pd.DataFrame(disc))
    # The run's examples are the ones it generated for; other stages' rows are joined onto them.
    table = pd.concat([p for p in parts if not p.empty], axis=1).reindex(sorted(resp["example_id"].unique()))
    dpo = dpo_per_example(run)  # dpo-eval has examples of its own (dpo.eval_split)
    return table if dpo.empty else pd.concat([table, dpo], axis=1).sort_index()


def unpaired_rows(path_a: Path, path_b: Path, paired: set[str]) -> tuple[pd.DataFrame, list[str]]:
    """Shared dpo-eval metrics the paired table lacks, as plain A, B and A − B with the reason
    there is no interval; and notes on dpo-eval metrics only one run has."""
    runs = {"A": RunDir(path_a), "B": RunDir(path_b)}
    summary = {k: dpo_summary(r) for k, r in runs.items()}
    if bool(summary["A"]) != bool(summary["B"]):
        only = "A" if summary["A"] else "B"
        return pd.DataFrame(), [f"DPO metrics not compared: only {only} ({runs[only].path}) has dpo-eval results."]
    lacking = [f"{k} ({r.path})" for k, r in runs.items() if not (r.stage("dpo-eval") / "responses.parquet").is_file()]
    why = (f"no per-example values: dpo-eval/responses.parquet missing in {' and '.join(lacking)}" if lacking
           else "the runs' dpo-eval share no examples")
    rows = [{"metric": m, "examples": float("nan"), "A": summary["A"][m], "B": summary["B"][m],
             "diff": summary["A"][m] - summary["B"][m], "low": float("nan"), "high": float("nan"), "p": float("nan"), "note": why}
            for m in summary["A"] if m in summary["B"] and m not in paired]
    return pd.DataFrame(rows), []


def compare_tables(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(metrics, disagreements): each shared metric with A, B and the paired A − B; and the
    examples ranked by their summed absolute difference over those metrics."""
    examples = sorted(set(a.index) & set(b.index))
    if not examples:
        raise UserError("the two runs share no examples (compare needs runs over the same example ids)")
    cols = [c for c in a.columns if c in b.columns]
    rows = []
    for col in cols:
        both = pd.DataFrame({"a": a.loc[examples, col], "b": b.loc[examples, col]}).dropna()
        if both.empty:
            continue
        r = paired_bootstrap(both["a"].tolist(), both["b"].tolist(), both.index.tolist())
        rows.append({"metric": col, "examples": len(both), "A": both["a"].mean(), "B": both["b"].mean(),
                     "diff": r.estimate, "low": r.low, "high": r.high, "p": r.p_value})
    if not rows:
        raise UserError("the two runs share examples but no metric (one run lacks the ack, attribute or bon artifacts the other has)")
    metrics = pd.DataFrame(rows)
    delta = (a.loc[examples, metrics["metric"]] - b.loc[examples, metrics["metric"]]).abs()
    top = delta.sum(axis=1).sort_values(ascending=False, kind="stable").head(TOP)
    dis = [{"example_id": ex, "disagreement": float(score),
            "largest": ", ".join(f"{m} {a.at[ex, m]:.2f} vs {b.at[ex, m]:.2f}" for m in delta.loc[ex].nlargest(3).index if delta.at[ex, m] > 0)}
           for ex, score in top.items() if score > 0]
    return metrics, pd.DataFrame(dis, columns=["example_id", "disagreement", "largest"])


def _row(r: pd.Series) -> list[str]:
    values = [r["metric"], "n/a" if pd.isna(r["examples"]) else str(int(r["examples"])), f"{100 * r['A']:.1f}%", f"{100 * r['B']:.1f}%"]
    if pd.isna(r["low"]):
        return [*values, f"{100 * r['diff']:+.1f} (no interval: {r['note']})", "n/a"]
    flag = "" if excludes_zero(r["low"], r["high"]) else " (includes 0)"
    p = "n/a" if pd.isna(r["p"]) else f"{r['p']:.3f}"  # a corrected row has no p-value
    return [*values, f"{100 * r['diff']:+.1f} [{100 * r['low']:+.1f}, {100 * r['high']:+.1f}]{flag}", p]


HEAD = ["metric", "examples", "A", "B", "A − B, pts [95% CI]", "p"]


def markdown(names: tuple[str, str], metrics: pd.DataFrame, dis: pd.DataFrame, n_shared: int, notes: list[str] | None = None) -> str:
    lines = [f"# Compare: A = `{names[0]}`, B = `{names[1]}`", "",
             f"{n_shared} shared examples. Per-example values, paired bootstrap over examples (95% percentile interval).", "",
             "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    lines += ["| " + " | ".join(_row(r)) + " |" for _, r in metrics.iterrows()]
    lines += ["", *notes] if notes else []
    lines += ["", f"## Examples where they disagree most (top {TOP})", ""]
    if dis.empty:
        lines.append("No example differs on any shared metric.")
    else:
        lines += ["| example | disagreement | largest differences (A vs B) |", "|---|---|---|"]
        lines += [f"| {r.example_id} | {r.disagreement:.2f} | {r.largest} |" for r in dis.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def html_page(names: tuple[str, str], metrics: pd.DataFrame, dis: pd.DataFrame, n_shared: int, notes: list[str] | None = None) -> str:
    from alignment.viewer.page import environment

    rows = [_row(r) for _, r in metrics.iterrows()]
    return environment().get_template("compare.html.j2").render(
        names=names, head=HEAD, rows=rows, disagreements=dis.to_dict("records"), n_shared=n_shared, top=TOP, notes=notes or [])


def compare_runs(path_a: Path, path_b: Path, out: Path) -> dict[str, Path]:
    a, b = per_example_metrics(path_a), per_example_metrics(path_b)
    metrics, dis = compare_tables(a, b)
    extra, notes = unpaired_rows(path_a, path_b, set(metrics["metric"]))
    corrected, why = corrected_rows(path_a, path_b)  # both runs labelled: A − B with the judge's error
    notes = [*notes, *why, *compare_notes({"A": path_a, "B": path_b})]  # judge-error-aware figures per run
    extra = [t for t in (extra, corrected) if not t.empty]
    metrics = pd.concat([metrics.assign(note=""), *extra], ignore_index=True)
    n_shared = len(set(a.index) & set(b.index))
    names = (str(path_a), str(path_b))
    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / "compare.md", "html": out / "compare.html", "csv": out / "compare.csv"}
    write_text(paths["md"], markdown(names, metrics, dis, n_shared, notes))
    write_text(paths["html"], html_page(names, metrics, dis, n_shared, notes))
    write_text(paths["csv"], metrics.to_csv(index=False))
    return paths


def cmd_compare(args: argparse.Namespace) -> int:
    a, b = Path(args.run_a), Path(args.run_b)
    out = Path(args.out) if args.out else Path("runs") / "compare" / f"{a.name}-vs-{b.name}"
    paths = compare_runs(a, b, out)
    print(f"compare: {paths['md']}, {paths['html']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="two runs side by side, with paired bootstrap differences")
    p.add_argument("run_a", metavar="RUN_A", help="run dir A")
    p.add_argument("run_b", metavar="RUN_B", help="run dir B")
    p.add_argument("--out", help="output folder (default runs/compare/<A>-vs-<B>/)")
    p.set_defaults(func=cmd_compare)
