"""Flags shared by the command groups: a run config and its run dir, and where stages run."""

from __future__ import annotations

import argparse
import dataclasses

from alignment.errors import UserError
from alignment.executor import SHARDED
from alignment.run_config import RunConfig


def common_flags(p: argparse.ArgumentParser, config_required: bool = True, kind: str = "run config",
                 example: str = "generation.n_samples=2") -> None:
    """CONFIG, --out, --set, --quiet, --verbose: the flags of every command that runs stages;
    `kind` and `example` name the config they read (a run config, or a ReasonBench experiment's)."""
    p.add_argument("config", nargs=None if config_required else "?", help=f"YAML {kind}")
    p.add_argument("--out", help="run dir (default runs/<config name>/)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help=f"override a config field, e.g. {example} (repeatable)")
    p.add_argument("--quiet", action="store_true", help="no progress bars or stage logs")
    p.add_argument("--verbose", action="store_true", help="show trainer logs, library warnings and stage details live (always in <run dir>/logs/)")


def sharded_list() -> str:
    """The stages with shards, as `--executor`'s help names them.

    >>> sharded_list()
    'generate, score, ack, audit and dpo-eval'
    """
    return ", ".join(SHARDED[:-1]) + " and " + SHARDED[-1]


def executor_flags(p: argparse.ArgumentParser, stage: str | None = None) -> None:
    """--executor and --address: where the sharded stages run (`with_executor` applies them); only
    on `run` and on the commands of the stages that have shards, the only ones they change."""
    where = "where this stage's shards run" if stage else f"where the sharded stages ({sharded_list()}) run"
    p.add_argument("--executor", choices=["local", "ray", "slurm"], default=None,
                   help=f"{where} (docs/cluster.md); wins over CONFIG's and --set's executor.kind (default: theirs, else local)")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="ray: the cluster to join, e.g. auto; wins over executor.address (default: theirs, else a local cluster)")


def with_executor(cfg: RunConfig, args: argparse.Namespace) -> RunConfig:
    """`--executor` / `--address` applied last: a flag wins over CONFIG and `--set`."""
    changes = {k: v for k, v in (("kind", args.executor), ("address", args.address)) if v is not None}
    if args.address is not None and changes.get("kind", cfg.executor.kind) != "ray":
        raise UserError("--address: joins a Ray cluster; give it with --executor ray")
    try:
        cfg.executor = dataclasses.replace(cfg.executor, **changes)
    except UserError as e:
        raise UserError(f"executor.{e}") from None
    return cfg
