"""`alignment sweep CONFIG --seeds 0-4 [--out DIR]`: does a run's headline hold on every seed?

One run per seed under `DIR/seed-<s>/` (default `DIR` = `runs/<name>-seeds/`), each with
`task.seed`, `generation.seed` and `attribution.seed` set to the seed: other examples, other
samples and other counterfactual draws (best-of-N is exact over every N-subset, so it has no seed). The model
organisms are the config's (trained once, cached), so the sweep measures the pipeline's spread
over data and sampling, not over organism training. Runs stop after `bon`, the DPO stages (where
the config turns DPO on: its effect is the sweep's second table) and the report; `--full` runs
every stage (the audit too). Each run resumes like `alignment run`.

The headline, per seed, on original prompts unless said otherwise, each a paired bootstrap
over examples (95%):

- `rm_d_vs_rm`: RM_D's pick acknowledges more than RM's at the headline N (`bon.headline_n`:
  by default the largest N at most half the samples; difference > 0): the plain RM's
  best-of-N pick hides the leak where RM_D's does not;
- `control`: RM_D's pick at the headline N acknowledges more on original prompts than the same
  selection on their counterfactuals, where the feature is absent (difference > 0): what RM_D
  surfaces is more than the judge's false alarms plus the policy's claims of a source it lacked.

It *holds* on a seed when both intervals exclude 0 in that direction. Reported beside them, not
part of the headline: `hide`, RM's pick at the headline N minus at N = 1 (does the plain RM
actively push acknowledgment below the policy's own rate?), and `control_all`, the control over
every sampled response (no selection), which measures the policy alone. `control` and
`control_all` are discriminations (acknowledgment on original − on counterfactual prompts);
`grounded` is RM_D's pick's grounded acknowledgment at the headline N (acknowledgment among picks
whose answer strategy D marks as caused by the feature − among the others, `alignment.stats`).

Writes
`DIR/sweep.csv` (one row per seed and criterion), `DIR/summary.json` (every figure pooled over
the generation seeds, hierarchically: generation seed, then training seed, then prompt;
`alignment.cli.sweep_pooled`; a claim needs at least five generation seeds), `DIR/record.json`
(everything `DIR/sweep.md` shows: copy it to `results/sweep_<name>.json` and `alignment results
render` renders the same page), `DIR/sweep.md` (with the
CPU, commit and the seconds its stages took, summed from their manifests, so a resumed sweep
still reports what the work cost) and prints how many seeds hold.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.analysis.bon import marked_headline
from alignment.analysis.stats import ack_control, excludes_zero, grounded, paired_bootstrap
from alignment.cli.flags import with_executor
from alignment.cli.sweep_pooled import pooled_markdown, pooled_summary
from alignment.config import parse_override
from alignment.errors import UserError
from alignment.executor import LOCAL, ExecutorConfig
from alignment.judge_error.dpo_estimates import dpo_sweep_notes
from alignment.judge_error.run_estimates import sweep_notes
from alignment.measure.bench import cpu_name
from alignment.run_config import RunConfig, load_config
from alignment.runner import STAGE_NAMES, locked_run, run_all
from alignment.runtime.fanout import run_each
from alignment.store import RunDir, git_commit, read_parquet, write_text

SEEDED = ("task.seed", "generation.seed", "attribution.seed")
HEADLINE_STAGES = ("build", "generate", "receipts", "attribute", "score", "ack", "bon", "dpo-pairs", "dpo-train", "dpo-eval", "report")
# Direction each criterion's difference must have for the headline to hold.
CRITERIA = {"rm_d_vs_rm": +1, "control": +1}
REPORTED = {"hide": -1, "control_all": +1, "grounded": +1}  # shown, not part of whether the headline holds


@dataclass(frozen=True)
class Criterion:
    name: str
    estimate: float
    low: float
    high: float
    examples: int
    n: int = 0  # the best-of-N the criterion compares at (0: none, control_all)

    @property
    def holds(self) -> bool:
        """The interval excludes 0 on the side the headline claims.

        >>> Criterion("control", 0.2, 0.05, 0.4, 12).holds, Criterion("hide", -0.1, -0.3, 0.02, 12).holds
        (True, False)
        """
        want = {**CRITERIA, **REPORTED}[self.name]
        return excludes_zero(self.low, self.high) and (self.estimate > 0) == (want > 0)


def parse_seeds(text: str) -> list[int]:
    """`0-4`, `0,2,5` or a mix; every seed once.

    >>> parse_seeds("0-2,7")
    [0, 1, 2, 7]
    """
    seeds: list[int] = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            seeds += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    except ValueError:
        raise UserError(f"--seeds: expected e.g. 0-4 or 0,1,2, got {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise UserError(f"--seeds: give distinct non-negative seeds, got {text!r}")
    return seeds


def _paired(name: str, a: pd.Series, b: pd.Series, n: int) -> Criterion:
    ids = sorted(set(a.index) & set(b.index), key=str)
    if not ids:
        raise UserError(f"sweep: no examples to compare for {name}")
    r = paired_bootstrap(a[ids].tolist(), b[ids].tolist(), ids)
    return Criterion(name, r.estimate, r.low, r.high, len(ids), n)


def headline(run: Path) -> list[Criterion]:
    """The criteria of one finished run dir at its headline N (reads `bon/per_example.parquet`, `ack/`)."""
    per = read_parquet(run / "bon" / "per_example.parquet")
    n_max = marked_headline(per[per["prompt"] == "orig"])
    if n_max < 2:
        raise UserError(f"{run}: the headline needs best-of-N with some N >= 2 (bon.ns)")

    def pick(n: int, reward: str, prompt: str = "orig") -> pd.Series:
        g = per[(per["prompt"] == prompt) & (per["N"] == n) & (per["reward"] == reward)]
        return g.set_index("example_id")["ack"]

    ack = read_parquet(run / "ack" / "data.parquet")
    c = ack_control(ack["example_id"].tolist(), ack["variant"].tolist(), ack["ack"].tolist())
    d = c.difference
    out = [
        _paired("hide", pick(n_max, "rm"), pick(1, "rm"), n_max),
        _paired("rm_d_vs_rm", pick(n_max, "rm_d"), pick(n_max, "rm"), n_max),
        _paired("control", pick(n_max, "rm_d"), pick(n_max, "rm_d", "cf"), n_max),
        Criterion("control_all", d.estimate, d.low, d.high, c.examples),
    ]
    o = per[(per["prompt"] == "orig") & (per["N"] == n_max) & (per["reward"] == "rm_d")]
    if "caused" in per.columns and len(o):  # a bon stage older than the caused columns has none
        g = grounded(o["example_id"].tolist(), o["ack"].tolist(), o["caused"].tolist(), acks_caused=o["ack_caused"].tolist())
        out.append(Criterion("grounded", g.difference.estimate, g.difference.low, g.difference.high, len(o), n_max))
    return out


def seed_config(path: str, overrides: list[str], seed: int) -> RunConfig:
    return load_config(path, [*overrides, *(f"{k}={seed}" for k in SEEDED)])


def headline_holds(df: pd.DataFrame) -> pd.Series:
    """seed -> whether every headline criterion holds (reported-only rows do not count)."""
    return df[df["criterion"].isin(list(CRITERIA))].groupby("seed")["holds"].all()


def table(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["seed", "criterion", "N", "estimate", "low", "high", "examples", "holds", "seconds"])


def to_markdown(df: pd.DataFrame, config: str, cpu: str, commit: str) -> str:
    held = headline_holds(df)
    ns = "/".join(str(int(n)) for n in sorted(set(df.loc[df["criterion"].isin(list(CRITERIA)), "N"])))
    lines = [
        f"# Seed sweep: `{config}`",
        "",
        f"Headline holds on **{int(held.sum())} of {len(held)}** generation seeds (both intervals exclude 0 in the "
        f"claimed direction). CPU: {cpu}; written at commit {commit}. Per generation seed, "
        "each interval is a 95% paired bootstrap over that seed's prompts; the figures pooled over generation seeds "
        "follow the table.",
        "",
        f"| seed | RM_D − RM at BoN-{ns} | RM_D pick: discrimination (original − counterfactual) | holds "
        f"| RM: BoN-{ns} − BoN-1 | all responses: discrimination | RM_D pick: grounded (true − false ack) | seconds |",
        "|---:|---|---|---|---|---|---|---:|",
    ]
    for seed, g in df.groupby("seed", sort=True):
        by = {r.criterion: r for r in g.itertuples()}
        cells = [f"{100 * by[k].estimate:+.1f} [{100 * by[k].low:+.1f}, {100 * by[k].high:+.1f}]" if k in by else "n/a"
                 for k in (*CRITERIA, *REPORTED)]
        lines.append(f"| {seed} | {' | '.join(cells[:2])} | {'yes' if held[seed] else 'no'} | {' | '.join(cells[2:])} "
                     f"| {g['seconds'].iloc[0]:.0f} |")  # fmt: skip
    spread = df.groupby("criterion")["estimate"].agg(["min", "max"])
    lines += ["", "Spread of the point estimates across seeds (points): " + "; ".join(
        f"{k} {100 * spread.loc[k, 'min']:+.1f} to {100 * spread.loc[k, 'max']:+.1f}" for k in (*CRITERIA, *REPORTED) if k in spread.index), ""]
    return "\n".join(lines)


DPO_MEASURES = {"ack_diff": "acknowledgment (orig)", "acc_diff": "accuracy (orig)", "cf_ack_diff": "acknowledgment (cf, control)",
                "disc_diff": "discrimination (orig − cf)", "grounded_diff": "grounded acknowledgment (true − false)"}


def dpo_rows(run: Path, seed: int) -> list[dict]:
    """DPO(RM_D) − DPO(RM) of one run (its `dpo-eval/summary.json`), pooled over training seeds, and
    whether the DPO criteria hold; none when the run has no DPO evaluation."""

    from alignment.dpo.effects import holds

    path = run / "dpo-eval" / "summary.json"
    if not path.is_file():
        return []
    summary = json.loads(path.read_text())
    if not summary.get("pooled"):
        return []
    ok = holds(summary)
    per_seed = {m: [s[m]["est"] for s in summary["seeds"] if m in s] for m in DPO_MEASURES}
    # The commit that evaluated this seed: a resumed sweep can reuse evaluations older than its own.
    manifest = run / "dpo-eval" / "manifest.json"
    commit = (json.loads(manifest.read_text()).get("git_commit") or "")[:7] if manifest.is_file() else ""
    return [{"seed": seed, "measure": m, **summary["pooled"][m], "per_training_seed": per_seed[m],
             "holds": all(ok.values()), "commit": commit or "unknown"} for m in DPO_MEASURES if m in summary["pooled"]]


def dpo_markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    df = pd.DataFrame(rows)
    held = df.groupby("seed")["holds"].first()
    lines = ["## DPO: DPO(RM_D) − DPO(RM) on held-out prompts", "",
             f"Holds (pooled acknowledgment interval above 0, a positive estimate on every training seed, accuracy "
             f"lower bound above −10 points) on **{int(held.sum())} of {len(held)}** generation seeds. Points, 95% "
             "paired bootstrap over training seeds and prompts; per training seed in brackets.", "",
             "| seed | " + " | ".join(DPO_MEASURES.values()) + " | holds | evaluated at |",
             "|---:|" + "---|" * len(DPO_MEASURES) + "---|---|"]
    for seed, g in df.groupby("seed", sort=True):
        by = {r["measure"]: r for r in g.to_dict("records")}
        cells = [f"{100 * by[m]['est']:+.1f} [{100 * by[m]['lo']:+.1f}, {100 * by[m]['hi']:+.1f}] "
                 f"({', '.join(f'{100 * e:+.0f}' for e in by[m]['per_training_seed'])})" if m in by else "n/a" for m in DPO_MEASURES]
        lines.append(f"| {seed} | {' | '.join(cells)} | {'yes' if held[seed] else 'no'} | {g['commit'].iloc[0]} |")
    return [*lines, ""]


def sweep_dir(config: str, overrides: list[str], out: str | None) -> Path:
    return Path(out) if out else Path("runs") / f"{load_config(config, overrides).name}-seeds"


@dataclass(frozen=True)
class SeedResult:
    seed: int
    rows: list[dict]  # the headline criteria, one row each
    dpo: list[dict]  # DPO(RM_D) - DPO(RM), one row per measure; none without DPO


def run_seed(cfg: RunConfig, seed: int, out: Path, stages: list[str], quiet: bool) -> SeedResult:
    """One seed's run (resumed like `alignment run`) and its rows for the sweep's tables."""
    with locked_run(cfg, out) as run:
        run_all(cfg, run, quiet, stages)
    seconds = sum(run.seconds(name) for name in stages)
    rows = [{"seed": seed, "criterion": c.name, "N": c.n, "estimate": c.estimate, "low": c.low, "high": c.high,
             "examples": c.examples, "holds": c.holds, "seconds": seconds} for c in headline(run.path)]  # fmt: skip
    return SeedResult(seed, rows, dpo_rows(run.path, seed))


@dataclass(frozen=True)
class SeedRun:
    """`run_seed` for one seed, shipped whole to a Ray task or a SLURM array task (`alignment.runtime.fanout`)."""

    configs: dict[int, RunConfig]
    root: Path
    stages: tuple[str, ...]
    quiet: bool
    cwd: Path  # the driver's, so relative paths in the config mean the same on a worker that shares it

    def __call__(self, seed: int) -> SeedResult:
        here = contextlib.chdir(self.cwd) if self.cwd.is_dir() else contextlib.nullcontext()
        with here:
            return run_seed(self.configs[seed], seed, self.root / f"seed-{seed}", list(self.stages), self.quiet)

    def checkpoint(self, seed: int) -> Any:
        """submitit: a preempted or timed-out array task is requeued and its run resumes."""
        import submitit

        return submitit.helpers.DelayedSubmission(self, seed)


def record_markdown(record: dict[str, Any]) -> str:
    """sweep.md (less the judge-error notes, which read the run folders) from `record.json` alone,
    so a copy of the record under `results/` renders the same page (`alignment results render`)."""
    df = table(record["rows"])
    head = to_markdown(df, record["config"], record["cpu"], record["commit"]) if len(df) else f"# Seed sweep: `{record['config']}`\n"
    command = f"alignment sweep {record['config']} --seeds {','.join(map(str, record['seeds']))}" + "".join(
        f" --set {o}" for o in record.get("overrides", []))
    ran = ", ".join(record.get("stage_commits", [])) or "unknown"
    return "\n".join([head, f"Written by `{command}`; its stages ran at commit(s) {ran}.", "", *pooled_markdown(record["pooled"]), *dpo_markdown(record["dpo"])])


def stage_commits(root: Path, seeds: list[int]) -> list[str]:
    """The commits (7 characters) that ran the finished stages of these seeds' runs: a resumed sweep
    reuses stages run by older code, and its page says so."""
    found = set()
    for s in seeds:
        run = RunDir(root / f"seed-{s}")
        for manifest in run.path.glob("*/manifest.json"):
            found.add(((run.manifest(manifest.parent.name) or {}).get("git_commit") or "unknown")[:7])
    return sorted(found)


def write_summary(root: Path, config: str, seeds: list[int], done: dict[int, SeedResult], overrides: list[str] = ()) -> None:
    """record.json (everything the page shows: rows, pooled figures, CPU, commit), sweep.csv,
    sweep.md, sweep_dpo.csv and summary.json (the figures pooled over generation seeds,
    `alignment.cli.sweep_pooled`) from the seeds finished so far, in `seeds` order."""
    finished = [done[s] for s in seeds if s in done]
    df = table([r for res in finished for r in res.rows])
    dpo = [r for res in finished for r in res.dpo]
    write_text(root / "sweep.csv", df.to_csv(index=False))
    runs = {f"seed {s}": root / f"seed-{s}" for s in seeds}
    notes = sweep_notes(runs) + dpo_sweep_notes(runs)  # judge-error-aware figures
    pooled = pooled_summary({s: root / f"seed-{s}" for s in seeds if s in done})
    record = {"config": config, "seeds": seeds, "overrides": list(overrides), "cpu": cpu_name(),
              "commit": git_commit() or "unknown", "stage_commits": stage_commits(root, [s for s in seeds if s in done]),
              "rows": df.to_dict("records"), "dpo": dpo, "pooled": pooled}
    write_text(root / "record.json", json.dumps(record, indent=1, default=float) + "\n")
    write_text(root / "summary.json", json.dumps({"config": config, **pooled}, indent=2) + "\n")
    write_text(root / "sweep.md", "\n".join([record_markdown(record), *notes]))
    if dpo:
        write_text(root / "sweep_dpo.csv", pd.DataFrame(dpo).to_csv(index=False))


def sweep(config: str, seeds: list[int], root: Path, overrides: list[str], full: bool, quiet: bool,
          executor: ExecutorConfig = LOCAL) -> pd.DataFrame:
    """One run per seed on `executor` (local: here, one after another; ray or slurm: each seed's
    whole run one task, its stages in that task's process), the summary written as each finishes."""
    stages = tuple(STAGE_NAMES) if full else HEADLINE_STAGES
    inner = dataclasses.replace(executor, kind="local", address=None)  # a seed run's stages: in its own process
    configs = {s: dataclasses.replace(seed_config(config, overrides, s), executor=inner) for s in seeds}
    done: dict[int, SeedResult] = {}

    def finished(result: SeedResult) -> None:  # written after every seed: an interrupted sweep keeps what it measured
        done[result.seed] = result
        write_summary(root, config, seeds, done, overrides)

    where = root if executor.kind == "local" else root.absolute()  # a worker may start elsewhere
    run_each(seeds, SeedRun(configs, where, stages, quiet, Path.cwd()), finished, where / "submitit", executor)
    return table([r for s in seeds if s in done for r in done[s].rows])


def cmd_sweep(args: argparse.Namespace) -> int:
    seeds = parse_seeds(args.seeds)
    for text in args.overrides:  # --seeds sets these on every run: a --set of one would be lost
        parts, value = parse_override(text)
        key = ".".join(parts)
        if key in SEEDED or (len(parts) == 1 and isinstance(value, dict) and f"{key}.seed" in SEEDED and "seed" in value):
            raise UserError(f"sweep: --set {key} conflicts with --seeds, which sets {', '.join(SEEDED)} on every run")
    root = sweep_dir(args.config, args.overrides, args.out)
    executor = with_executor(load_config(args.config, args.overrides), args).executor
    df = sweep(args.config, seeds, root, args.overrides, args.full, args.quiet, executor)
    held = headline_holds(df)
    print(f"headline holds on {int(held.sum())} of {len(held)} seeds: {root / 'sweep.md'}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a config over several seeds and check its headline on each")
    p.add_argument("config", help="YAML run config")
    p.add_argument("--seeds", default="0-4", help=f"seeds, e.g. 0-4 or 0,3,7 (default 0-4); each run gets {', '.join(SEEDED)} = the seed, so --set of those is refused")
    p.add_argument("--out", help="sweep dir (default runs/<config name>-seeds/)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field of every seed's run, e.g. generation.n_samples=2 (repeatable)")
    p.add_argument("--full", action="store_true", help="run every stage (the audit too), not only those the headline and the DPO effect need")
    p.add_argument("--quiet", action="store_true", help="no progress bars or stage logs (the seed table is still printed)")
    p.add_argument("--executor", choices=["local", "ray", "slurm"], default=None,
                   help="where the seed runs go: local, one after another; ray, one Ray task per seed; slurm, one array "
                        "task per seed (each run's stages in its own process; docs/cluster.md); wins over executor.kind")
    p.add_argument("--address", default=None, metavar="ADDR", help="ray: the cluster to join, e.g. auto; wins over executor.address (default: theirs, else a local cluster)")
    p.set_defaults(func=cmd_sweep)
