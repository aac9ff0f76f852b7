"""`alignment judge` and `alignment judge validate`: label responses, or check a judge.

    alignment judge --task mathbook --input IN.jsonl --output OUT.jsonl [--judge keyword]
    alignment judge validate --task biasqa [--labels FILE] [--json] [--part look|sealed] [--judge llm]
    alignment judge sample RUN [--n 50] [--out DIR] [--stage dpo-eval]   (a labelling sample; validate reads it back)
    alignment judge estimate --judged J.jsonl --labels L.jsonl [--json]   (rate corrected by labels)

Input rows need `full_response` (other fields are kept); output rows add `ack` (bool),
`ack_raw` (judge text or the deciding rule) and `ack_parsed` (False: unparseable LLM output,
counted as no acknowledgment). Label rows need `full_response` and `ack_label`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.judge import (
    DEFAULT_JUDGE,
    JUDGES,
    JudgeConfig,
    count_unparsed,
    judge_definitions,
    make_judge,
)
from alignment.judge_error.labels import default_labels, read_rows, validate, write_rows

# The options that labelling (`alignment judge` without a subcommand) requires and its
# subcommands do not take from the parent.
LABEL_REQUIRED = ("task", "input", "output")


class SubcommandParsers(argparse._SubParsersAction):
    """`alignment judge` labels with --task/--input/--output, all required, unless a subcommand
    (`validate`, `sample`, ...) is given: that one's own options apply, so the parent's required
    marks are lifted before argparse checks them (after the subcommand has parsed)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        for action in parser._actions:
            if action.dest in LABEL_REQUIRED:
                action.required = False
        super().__call__(parser, namespace, values, option_string)


def _judge_options(p: argparse.ArgumentParser, task_required: bool = False) -> None:
    p.add_argument("--task", choices=judge_definitions(), required=task_required,
                   help="judge definition: a task's judge_as name")
    p.add_argument("--judge", default=None, help=f"judge name ({', '.join(JUDGES.names())}; default {DEFAULT_JUDGE})")
    p.add_argument("--model", default=None, help="llm judge: preset, hub id or local folder")
    p.add_argument("--backend", default=None, choices=["transformers", "vllm"], help="llm judge backend")
    p.add_argument("--max-new-tokens", type=int, default=None, help="llm judge: tokens per verdict")
    p.add_argument("--seed", type=int, default=None, help="llm judge: seed")
    p.add_argument("--members", default=None, help="ensemble: comma-separated judge names")


def config_from_args(args: argparse.Namespace) -> JudgeConfig:
    kwargs: dict[str, Any] = {
        "name": args.judge,
        "model": args.model,
        "backend": args.backend,
        "max_new_tokens": args.max_new_tokens,
        "seed": args.seed,
    }
    if args.members:
        kwargs["members"] = [m.strip() for m in args.members.split(",") if m.strip()]
    return JudgeConfig(**{k: v for k, v in kwargs.items() if v is not None})


def run_judge(args: argparse.Namespace) -> int:
    if Path(args.output).is_dir():  # fail before judging, not after
        raise UserError(f"--output {args.output}: is a directory, expected a file path")
    rows = read_rows(args.input, ("full_response",))
    judge = make_judge(config_from_args(args))
    verdicts = judge.judge(args.task, [r["full_response"] for r in rows])
    out = [
        {**row, "ack": v.ack, "ack_raw": v.raw, "ack_parsed": v.parsed}
        for row, v in zip(rows, verdicts, strict=True)
    ]
    write_rows(args.output, out)
    acks = sum(v.ack for v in verdicts)
    print(
        f"judged {len(rows)} responses with {judge.name}: {acks} acknowledge, "
        f"{count_unparsed(verdicts)} unparseable -> {args.output}",
        file=sys.stderr,
    )
    return 0


def run_validate(args: argparse.Namespace) -> int:
    path = args.labels or default_labels(args.task)
    if args.labels is None:  # before judging: the warning must not follow a long LLM run
        print(f"alignment judge validate: warning: no --labels, so scoring {path}, the project's own rows, "
              "kept as a regression check of the judges: their accuracy is not a measurement of a judge; "
              "give --labels FILE with labels of your own", file=sys.stderr)
    rows = read_rows(path, ("full_response", "ack_label"), unique_ids=True)
    if args.part:
        from alignment.judge_error.split import dev_parts

        missing = next((n for n, r in enumerate(rows, start=1) if "id" not in r), None)
        if missing:
            raise UserError(f"{path} row {missing}: --part needs an 'id' field")
        rows = [r for r, p in zip(rows, dev_parts(rows), strict=True) if p == args.part]
    unlabelled = sum(r["ack_label"] is None for r in rows)
    if len(rows) == unlabelled:
        raise UserError(f"{path}: no labelled rows (ack_label true or false)")
    judge = make_judge(config_from_args(args))
    result = validate(judge, args.task, rows)
    title = f"judge {judge.name} on {args.task} labels {path}" + (f" (part {args.part})" if args.part else "")
    if judge.name == "keyword":
        from alignment.judge.keyword import rules_id

        title += f", rules {rules_id()}"
    if args.json:
        import json

        card = {"title": title, "labels": str(path), "judge": judge.name, "task": args.task, "unlabelled_skipped": unlabelled}
        print(json.dumps(card | result.card(), indent=2))
    else:
        print(result.report(title) + (f"\nunlabelled rows skipped: {unlabelled}" if unlabelled else ""))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "judge",
        help="label responses: does the reasoning acknowledge the feature?",
        usage="alignment judge --task TASK --input IN.jsonl --output OUT.jsonl [judge options]\n"
              "       alignment judge {validate,sample,estimate,grid,plan} ... (see `alignment judge COMMAND --help`)",
        description="Add ack/ack_raw to every JSONL row, or `validate` a judge against labels.",
    )
    _judge_options(p, task_required=True)
    p.add_argument("--input", required=True, help="JSONL with a full_response field per row")
    p.add_argument("--output", required=True, help="JSONL to write (written atomically)")
    p.set_defaults(func=run_judge)
    p.register("action", "parsers", SubcommandParsers)
    inner = p.add_subparsers(dest="judge_command", metavar="{validate,sample,estimate,grid,plan}", prog="alignment judge",
                             help="instead of labelling: check a judge against labels, or estimate with them")
    v = inner.add_parser("validate", help="accuracy, precision/recall/F1, confusion matrix vs labels")
    _judge_options(v, task_required=True)
    v.add_argument("--labels", default=None, help="JSONL with full_response and ack_label: your own labelled rows (without it: "
                   "the project's own regression rows, whose accuracy is no measurement; a warning says so)")
    v.add_argument("--json", action="store_true", help="print the judge card as JSON")
    v.add_argument("--part", choices=["look", "sealed"], default=None, help="only one part of the development split (alignment/judge_error/split.py)")
    v.set_defaults(func=run_validate)
    from alignment.judge_error.sample import register_sample

    register_sample(inner, _judge_options)
    from alignment.judge_error.estimate import register_estimate

    register_estimate(inner)
    from alignment.measure.validation_grid import register_grid

    register_grid(inner)
    from alignment.judge_error.power import register_plan

    register_plan(inner)
