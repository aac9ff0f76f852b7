"""Pipeline subcommands: `alignment run CONFIG`, one per stage, and `alignment config show`.

Each is a thin wrapper: resolve the config, pick the run dir, call the stage function.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from alignment.cli.flags import common_flags, executor_flags, with_executor
from alignment.config import (
    apply_overrides,
    describe,
    from_dict,
    parse_override,
    read_yaml,
    to_dict,
)
from alignment.disk.faults import fault_of
from alignment.errors import UserError
from alignment.executor import SHARDED
from alignment.run_config import RunConfig, load_config
from alignment.runner import (
    STAGE_NAMES,
    ensure_organisms,
    locked_run,
    run_all,
    run_stage,
    stage_needs,
)
from alignment.runtime.console import run_log
from alignment.stages import DOES
from alignment.store import RunDir
from alignment.tasks import TASKS


def _logged(run: RunDir, args: argparse.Namespace, body: Callable[[], None]) -> int:
    """Run `body` with its logs in `<run dir>/logs/`; an unexpected error is one line on the
    console, its traceback in the log (shown live with --verbose)."""
    with run_log(run.path, verbose=args.verbose, quiet=args.quiet) as log_path:
        try:
            body()
        except (UserError, KeyboardInterrupt):
            raise
        except Exception as e:
            if fault_of(e) is not None:  # a full disk is no bug: the CLI says so in one line
                raise
            logging.getLogger("alignment").exception("command failed")
            if args.verbose:
                raise
            print(f"alignment: error: {type(e).__name__}: {e} (traceback in {log_path})", file=sys.stderr)
            return 1
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from alignment.reasonbench.experiments.experiment_config import is_experiment

    if is_experiment(args.config):  # a top-level `reasonbench:` section: the ReasonBench experiments
        return run_experiment(args)
    cfg = with_executor(load_config(args.config, args.overrides), args)
    with locked_run(cfg, args.out) as run:
        code = _logged(run, args, lambda: run_all(cfg, run, args.quiet))
    if not args.quiet and code == 0:
        print(f"run dir: {run.path} (report.html, logs/)")
    return code


def run_experiment(args: argparse.Namespace, stages: list[str] | None = None) -> int:
    """`alignment run CONFIG` for an experiment config, or one stage of it."""
    from alignment.reasonbench.experiments.experiment import run_all as run_experiment_stages
    from alignment.reasonbench.experiments.experiment_config import is_experiment, load_experiment

    if not is_experiment(args.config):
        raise UserError(f"{args.config}: not a ReasonBench experiment config (it needs a top-level "
                        "'reasonbench:' section, as in configs/reasonbench_embedded.yaml)")  # fmt: skip
    cfg = load_experiment(args.config, args.overrides)
    with locked_run(cfg, args.out) as run:
        code = _logged(run, args, lambda: run_experiment_stages(cfg, run, args.quiet, stages))
    if not args.quiet and code == 0 and stages is None:
        print(f"run dir: {run.path} (report.md, report/)")
    return code


def _build_flags(args: argparse.Namespace) -> dict[str, object]:
    """`alignment build`'s task flags as `task.*` fields (given flags only)."""
    flags: dict[str, object] = {}
    if args.task is not None:
        flags["name"] = args.task
    if args.data_dir is not None:
        flags |= {"source": "local", "data_dir": args.data_dir}
    if args.splits is not None:
        flags["splits"] = args.splits
    if args.n is not None:
        flags["n_examples"] = args.n
    return flags


FLAG_OF = {"name": "--task", "source": "--data-dir", "data_dir": "--data-dir", "splits": "--splits", "n_examples": "--n"}


def _refuse_flag_and_set(flags: dict[str, object], overrides: list[str]) -> None:
    """A task flag and a `--set` naming the same field: neither silently loses, both are refused."""
    for text in overrides:
        parts, _ = parse_override(text)
        hit = [f for f in flags if parts == ["task"] or parts[:2] == ["task", f]]
        if hit:
            raise UserError(f"build: {FLAG_OF[hit[0]]} and --set {'.'.join(parts)} both set task.{hit[0]}; give one of them")


def _build_config(args: argparse.Namespace) -> RunConfig:
    """Defaults < CONFIG (if any) < the task flags < `--set`: every flag and override applies; a
    flag overrides CONFIG's field, and a flag and a `--set` of the same field are refused."""
    flags = _build_flags(args)
    _refuse_flag_and_set(flags, args.overrides)
    if args.config is None:
        if "name" not in flags or "data_dir" not in flags:
            raise UserError(f"build: give a CONFIG, or --task {{{','.join(TASKS.names())}}} with --data-dir PATH")
        if not args.out:
            raise UserError("build: --out DIR is required without a CONFIG")
        data: dict = {"name": f"{flags['name']}-local", "task": {"n_examples": 0}}
    else:
        data = read_yaml(args.config)
        data.setdefault("name", Path(args.config).stem)
        if not isinstance(data.get("task", {}), dict):
            raise UserError(f"{args.config}: task: expected a mapping")
        data["task"] = dict(data.get("task") or {})
    data["task"].update(flags)
    data_dir = data["task"].get("data_dir")
    if "data_dir" in flags and not Path(str(data_dir)).is_dir():
        raise UserError(f"--data-dir: folder not found: {data_dir}")
    if "data_dir" in flags and "splits" not in flags and "splits" not in data["task"]:  # CONFIG's splits hold
        task = TASKS.get(str(data["task"].get("name", "mathbook")))
        data["task"]["splits"] = task.local_splits(Path(str(data_dir)))
        if not data["task"]["splits"]:
            raise UserError(f"--data-dir: no {task.name} splits found in {data_dir}")
    return from_dict(RunConfig, apply_overrides(data, args.overrides))


def cmd_stage(args: argparse.Namespace) -> int:
    if args.stage == "build":
        cfg = _build_config(args)
    else:
        if args.config is None:
            raise UserError(f"{args.stage}: a CONFIG file is required")
        cfg = with_executor(load_config(args.config, args.overrides), args)
    with locked_run(cfg, args.out) as run:

        def body() -> None:
            ensure_organisms(cfg, (lambda m: None) if args.quiet else print, [args.stage])
            run_stage(args.stage, cfg, run, args.quiet)

        return _logged(run, args, body)


def cmd_config(args: argparse.Namespace) -> int:
    from alignment.reasonbench.experiments.experiment_config import is_experiment, load_experiment

    if args.action == "reference":  # docs/config.md: every field of every config, as Markdown
        from alignment.cli.config_reference import reference

        print(reference(), end="")
        return 0
    if args.action == "stages":  # the docs' stage table, in the words of the stages' --help
        from alignment.cli.config_reference import stage_table

        print(stage_table(), end="")
        return 0
    if is_experiment(args.config):
        print(yaml.safe_dump(to_dict(load_experiment(args.config, args.overrides)), sort_keys=False), end="")
        return 0
    if args.config or args.overrides:  # `--set` alone shows the defaults with the overrides
        cfg = load_config(args.config, args.overrides)
        print(yaml.safe_dump(to_dict(cfg), sort_keys=False), end="")
    else:
        print("\n".join(describe(RunConfig)))
    return 0


def stage_description(name: str) -> str:
    """`alignment <stage> --help`'s text: what the stage does (the docs' stage table's words) and
    what it needs first."""
    does = DOES[name] + ("" if DOES[name].endswith("?") else ".")
    return (f"Runs only the {name} stage, one step of `alignment run`; it writes {name}/ in the run dir. "
            f"What it does: {does} Needs first: {stage_needs(name)}, finished in the same run dir "
            "(`alignment run CONFIG` runs every stage in order and skips finished ones).")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run every stage of a config (skips finished ones)",
                       description="Run every stage of CONFIG in order into its run dir; a finished stage whose "
                                   "config is unchanged is skipped, an interrupted one resumes.")
    common_flags(p)
    executor_flags(p)
    p.set_defaults(func=cmd_run)
    for name in STAGE_NAMES:
        p = sub.add_parser(name, help=DOES[name], description=stage_description(name))
        common_flags(p, config_required=name != "build")
        if name in SHARDED:
            executor_flags(p, stage=name)
        else:  # nothing of this stage runs in shards: --executor would change nothing
            p.set_defaults(executor=None, address=None)
        if name == "build":
            _build_options(p)
        p.set_defaults(func=cmd_stage, stage=name)
    p = sub.add_parser("config", help="show the resolved config, or every field's documentation")
    p.add_argument("action", choices=["show", "reference", "stages"],
                   help="show: CONFIG resolved (without CONFIG, every field); reference: every field as Markdown "
                        "(docs/config.md); stages: the stage table as Markdown, in the words of each stage's --help")
    p.add_argument("config", nargs="?", help="YAML run or experiment config (show only; default: the built-in defaults)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config field before showing it, e.g. generation.n_samples=2 (repeatable)")
    p.set_defaults(func=cmd_config)
    p = sub.add_parser("organism", help="build (or find cached) model organisms")
    p.add_argument("action", choices=["train", "list", "ship"],
                   help="train: merge the shipped adapter, or train from the recipe where none matches; list: cached "
                        "folders; ship: train from the recipe and write the adapter into alignment/organism/adapters/")
    p.add_argument("names", nargs="*", help="organism presets (default: all)")
    p.add_argument("--retrain", action="store_true", help="train: ignore the shipped adapter, train from the recipe")
    p.set_defaults(func=cmd_organism)


def _build_options(p: argparse.ArgumentParser) -> None:
    """`alignment build`'s task flags: a build without a CONFIG, or one field of CONFIG's task."""
    wins = "; overrides CONFIG's task.%s, refused with --set task.%s"
    p.add_argument("--task", help=f"task ({', '.join(TASKS.names())})" + wins % ("name", "name"))
    p.add_argument("--data-dir", help="local AQuA-RAT json or Winogender tsv folder (sets task.source: local)"
                   + wins % ("data_dir", "data_dir"))
    p.add_argument("--splits", nargs="+", help="splits to build (default: CONFIG's, else all found in --data-dir)" + wins % ("splits", "splits"))
    p.add_argument("--n", type=int, default=None, help="examples per split (0 = all; default all without a CONFIG)"
                   + wins % ("n_examples", "n_examples"))


def cmd_organism(args: argparse.Namespace) -> int:
    from alignment.organism import RECIPES, ensure_model, recipe, ship, trained_path

    names = args.names or sorted(RECIPES)
    for name in names:  # every name checked before anything trains
        recipe(name)
    for name in names:
        if args.action == "ship":
            from alignment.measure.bench import cpu_name  # imports torch: only when shipping

            path = ship(name, cpu=cpu_name())
        elif args.action == "train":
            path = ensure_model(name, retrain=args.retrain)
        else:
            path = trained_path(name)
        print(name, path if path is not None else "(not trained)")
    return 0
