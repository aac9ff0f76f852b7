"""`alignment reasonbench build --out DIR [--seed S] [--scale X]`, `alignment reasonbench audit DIR`,
`alignment reasonbench baseline DIR --kind majority|tfidf`, and one command per experiment stage:
`alignment reasonbench {targets,train,predict,evaluate,report} CONFIG [--out DIR] [--set K=V]`
(`alignment run CONFIG` runs them all; see `alignment.reasonbench.experiments.experiment`).

Thin wrappers over `build(BuildConfig) -> Path`, `audit(dir) -> AuditReport` and
`run_baseline(dir, kind) -> DataFrame`. `audit` exits 0 when clean, 1 when it found label
errors, broken controls, unit leakage, prompt overlap, malformed cases or wrong counts, and 2
(like every `UserError`) when DIR cannot be read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from alignment.errors import UserError


def cmd_build(args: argparse.Namespace) -> int:
    from alignment.reasonbench.benchmark.build import BuildConfig, build

    if args.workers is not None and not 1 <= args.workers <= 1024:
        raise UserError(f"--workers must be between 1 and 1024, got {args.workers}")
    if "\0" in args.out or not args.out.strip():
        raise UserError(f"--out {args.out[:80]!r}: not a usable folder path")
    build(BuildConfig(Path(args.out), args.seed, args.scale, args.quiet, args.workers))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from alignment.reasonbench.benchmark.audit import audit

    if "\0" in args.dir:
        raise UserError("DIR: a NUL character is not allowed in a path")
    report = audit(Path(args.dir))
    print(report.summary())
    print("audit: clean" if report.clean else "audit: FAILED")
    return 0 if report.clean else 1


def cmd_baseline(args: argparse.Namespace) -> int:
    from alignment.reasonbench.experiments.baseline import run_baseline, to_markdown

    table = run_baseline(Path(args.dir), args.kind)
    print(to_markdown(table, args.kind), end="")
    print(f"written: {Path(args.dir) / '_baselines' / args.kind}.csv and .md")
    return 0


def cmd_experiment_stage(args: argparse.Namespace) -> int:
    from alignment.cli.pipeline import run_experiment

    return run_experiment(args, [args.stage])


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reasonbench", help="build or audit the ReasonBench receipts benchmark")
    rb = p.add_subparsers(dest="reasonbench_command", metavar="ACTION")
    rb.required = True
    b = rb.add_parser("build", help="generate cases, controls and splits as Parquet under DIR")
    b.add_argument("--out", required=True, metavar="DIR", help="output folder")
    b.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    b.add_argument("--scale", type=float, default=1.0,
                   help="fraction of the published sizes, in (0, 1] (default 1)")  # fmt: skip
    b.add_argument("--workers", type=int, default=None,
                   help="processes (default: one per CPU, at most 8; rows do not depend on it)")  # fmt: skip
    b.add_argument("--quiet", action="store_true", help="no progress lines")
    b.set_defaults(func=cmd_build)
    a = rb.add_parser("audit", help="re-execute every row and check splits, controls, counts")
    a.add_argument("dir", metavar="DIR", help="folder written by `reasonbench build`")
    a.set_defaults(func=cmd_audit)
    bl = rb.add_parser("baseline", help="majority or character TF-IDF baseline: train -> locked")
    bl.add_argument("dir", metavar="DIR", help="folder written by `reasonbench build`")
    bl.add_argument("--kind", required=True, choices=("majority", "tfidf"),
                    help="majority label, or character n-gram TF-IDF + linear SVM")  # fmt: skip
    bl.set_defaults(func=cmd_baseline)
    from alignment.cli.flags import common_flags
    from alignment.reasonbench.experiments.experiment import STAGES

    for name in STAGES:
        st = rb.add_parser(name, help=f"experiment stage '{name}' of a reasonbench config")
        common_flags(st, kind="experiment config (a top-level reasonbench: section)", example="reasonbench.seeds=[0]")
        st.set_defaults(func=cmd_experiment_stage, stage=name)
