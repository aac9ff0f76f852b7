"""Where a stage's shards run: here (`local`), as Ray actors (`ray`) or as SLURM job arrays (`slurm`).

`alignment run CONFIG --executor ray [--address ADDR]` (or `executor.kind` in the config). The
sharded stages (generate, score, ack, and the sampling inside audit and dpo-eval) hand their missing
shard indices to `run_shards` with two functions: `load()` builds the model (once per worker) and
`compute(model, i)` returns shard `i`'s rows. Each shard is written atomically at its own index
(`part-XXXXX.parquet`), so a retried or duplicated shard overwrites itself with the same rows and
never adds any; which shards are missing, and so resume, is decided by the caller exactly as in a
local run. Nothing here schedules: Ray's `ActorPool` and submitit's job arrays do.

- `local`: one model in this process, shards in order (what every run did before executors).
- `ray`: `executor.workers` actors, each one model replica loaded once and reused across shards,
  each asking for `num_gpus` / `num_cpus` / `memory_gb`; a dead worker is restarted and its shard
  retried by Ray (`max_retries`). The driver writes the rows the actors return, so workers need no
  shared file system. Without `address` a local cluster is started (usage stats and dashboard off).
- `slurm`: submitit job arrays, one array task per `shards_per_task` shards, each loading the
  model once and writing its shards itself (the run dir must be on a shared file system); a
  preempted or timed-out task is requeued and skips the shards it already wrote.
  `cluster: local` runs the same array as local processes (tests, dry runs).

The executor is not part of any stage key: rows do not depend on where they were computed, so a
run started locally resumes on Ray or SLURM from the shards it has.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from alignment.config import check, doc, from_dict, short
from alignment.errors import UserError, did_you_mean
from alignment.store import read_parquet, write_parquet

Rows = list[dict[str, Any]]
Load = Callable[[], Any]
Compute = Callable[[Any, int], Rows]


@dataclass
class ExecutorConfig:
    """Where sharded stages run; not part of any stage key (the rows are the same everywhere)."""

    kind: Literal["local", "ray", "slurm"] = doc(
        "local: this process; ray: Ray actors; slurm: submitit job arrays. `alignment run --executor` overrides it.", "local")
    address: str | None = doc("ray: the cluster to join (e.g. auto or ray://head:10001); null starts a local one. "
                              "`--address` overrides it.", None)
    local_cpus: int | None = doc("ray: CPUs of the local cluster started when address is null (null: all).", None)
    workers: int = doc("ray: model replicas (actors), each loaded once; slurm: array tasks running at once; "
                       "`sweep`: seed runs at once.", 1)
    num_gpus: float = doc("GPUs per worker (ray actor or slurm array task; under `sweep`, per seed run); "
                          "slurm needs a whole number.", 0.0)
    num_cpus: float | None = doc(
        "CPUs per worker (ray actor or slurm array task); its torch uses that many threads. null: under ray the "
        "cluster's CPUs shared among the workers (a local cluster's local_cpus, else all), under slurm 1.", None)
    memory_gb: float | None = doc("Memory per worker in GiB (ray: a scheduling request; slurm: --mem); null: none asked.", None)
    stages: dict[str, dict[str, Any]] = doc(
        "Per-stage overrides of workers, num_gpus, num_cpus and memory_gb, e.g. {score: {num_gpus: 2}}; the stages "
        "with shards: generate, score, ack, audit, dpo-eval. A stage not named uses the fields above.", factory=dict)
    max_retries: int = doc("ray: restarts of a dead worker and retries of its shard before the stage fails.", 3)
    partition: str | None = doc("slurm: the partition (null: the cluster's default).", None)
    time_min: int = doc("slurm: time limit of one array task in minutes (a timed-out task requeues and resumes).", 240)
    shards_per_task: int = doc("slurm: shards per array task (one model load each).", 8)
    cluster: Literal["slurm", "local"] = doc("slurm: submit with sbatch (slurm) or run the array as local processes (local).", "slurm")

    def __post_init__(self) -> None:
        check(self.workers >= 1, "workers", f"must be at least 1, got {self.workers}")
        check(self.num_gpus >= 0, "num_gpus", f"must be >= 0, got {self.num_gpus}")
        check(self.num_cpus is None or self.num_cpus > 0, "num_cpus", f"must be > 0 or null, got {self.num_cpus}")
        check(self.memory_gb is None or self.memory_gb > 0, "memory_gb", f"must be > 0 or null, got {self.memory_gb}")
        check(self.local_cpus is None or self.local_cpus >= 1, "local_cpus", f"must be >= 1 or null, got {self.local_cpus}")
        check(self.max_retries >= 0, "max_retries", f"must be >= 0, got {self.max_retries}")
        check(self.time_min >= 1, "time_min", f"must be at least 1, got {self.time_min}")
        check(self.shards_per_task >= 1, "shards_per_task", f"must be at least 1, got {self.shards_per_task}")
        check(self.kind != "slurm" or float(self.num_gpus).is_integer(), "num_gpus",
              f"slurm allocates whole GPUs, got {self.num_gpus}")
        check(self.address is None or bool(self.address.strip()), "address", "must not be empty (null starts a local cluster)")
        check(isinstance(self.stages, dict), "stages", f"expected a mapping of stage names, got {short(self.stages)}")
        self.stages = {name: _stage_fields(name, fields) for name, fields in self.stages.items()}
        for name in self.stages:
            self.for_stage(name)  # the merged request is checked too (e.g. slurm's whole GPUs)

    def for_stage(self, name: str) -> ExecutorConfig:
        """This executor with stage `name`'s overrides applied (the runner enters each stage with it).

        >>> ExecutorConfig(num_gpus=1, stages={"score": {"num_gpus": 2}}).for_stage("score").num_gpus
        2.0
        """
        over = self.stages.get(name)
        if not over:
            return self
        try:
            return dataclasses.replace(self, stages={}, **over)
        except UserError as e:
            raise UserError(f"stages.{name}.{e}") from None


# Stages that hand shards to `run_shards` (generate's sampling is also audit's and dpo-eval's),
# and the fields one of them may set for itself.
SHARDED = ("generate", "score", "ack", "audit", "dpo-eval")
STAGE_FIELDS = ("workers", "num_gpus", "num_cpus", "memory_gb")


def _stage_fields(name: Any, fields: Any) -> dict[str, Any]:
    """One `executor.stages` entry, checked and typed (`num_gpus: 2` becomes 2.0).

    >>> _stage_fields("scor", {})
    Traceback (most recent call last):
    alignment.errors.UserError: stages: 'scor' is not a stage with shards (did you mean 'score'?); those are generate, score, ack, audit, dpo-eval
    """
    check(name in SHARDED, "stages", f"{short(name)} is not a stage with shards{did_you_mean(str(name), SHARDED)}; "
          f"those are {', '.join(SHARDED)}")
    check(isinstance(fields, dict), f"stages.{name}", f"expected a mapping of {', '.join(STAGE_FIELDS)}, got {short(fields)}")
    for key in fields:
        check(key in STAGE_FIELDS, f"stages.{name}",
              f"unknown key {short(key)}{did_you_mean(str(key), STAGE_FIELDS)}; a stage sets {', '.join(STAGE_FIELDS)}")
    parsed = from_dict(ExecutorConfig, fields, f"stages.{name}")  # types and ranges, as for the fields above
    return {key: getattr(parsed, key) for key in fields}


LOCAL = ExecutorConfig()
_CURRENT: contextvars.ContextVar[ExecutorConfig] = contextvars.ContextVar("executor", default=LOCAL)


@contextlib.contextmanager
def executing(cfg: ExecutorConfig) -> Iterator[None]:
    """Run the block's sharded work on `cfg` (the runner wraps each stage in it), so the stages
    and `run_generation` callers need no executor argument."""
    token = _CURRENT.set(cfg)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> ExecutorConfig:
    return _CURRENT.get()


def run_shards(missing: list[int], path_of: Callable[[int], Path], load: Load, compute: Compute,
               done: Callable[[], None] = lambda: None, cfg: ExecutorConfig | None = None) -> None:
    """Write shard `i` to `path_of(i)` for every `i` in `missing`, on `cfg` (default: `current()`).

    `load` and `compute` travel to the workers under ray and slurm (cloudpickle): they must not
    hold open files or locks. `done()` is called once per finished shard, on this process.
    """
    cfg = cfg or current()
    if not missing:
        return
    if cfg.kind == "ray":
        _on_ray(cfg, missing, path_of, load, compute, done)
    elif cfg.kind == "slurm":
        _on_slurm(cfg, missing, path_of, load, compute, done)
    else:
        model = None
        for i in missing:
            if model is None:  # load the model only when there is work left
                model = load()
            write_parquet(path_of(i), compute(model, i))
            done()


def shard_path(folder: Path, i: int) -> Path:
    """Where shard `i` of a stage's shard folder lives."""
    return folder / f"part-{i:05d}.parquet"


def map_shards(folder: Path, n: int, load: Load, compute: Compute, desc: str, unit: str, quiet: bool,
               columns: tuple[str, ...] = ()) -> list[Any]:
    """Shards 0..n-1 of `folder`, in order, as DataFrames: the missing ones computed first by
    `run_shards` on the current executor (with a progress bar), the others read as they are.
    What generate's sampling, score and ack share; `columns` are the ones a shard must have."""
    from tqdm.auto import tqdm

    folder.mkdir(parents=True, exist_ok=True)
    missing = [i for i in range(n) if not shard_path(folder, i).exists()]
    if missing and current().kind == "local":
        # Loaded before the bar is drawn: a model that cannot load (or a first run's conversion
        # with bars of its own) then shows no bar stuck at 0% before its error or its own output.
        model = load()

        def preloaded() -> Any:
            return model

        load = preloaded
    with tqdm(total=n, initial=n - len(missing), desc=desc, unit=unit, disable=quiet) as bar:
        run_shards(missing, lambda i: shard_path(folder, i), load, compute, lambda: bar.update(1))
    return [read_parquet(shard_path(folder, i), columns) for i in range(n)]


# ----------------------------------------------------------------------------------------- ray


class Replica:
    """One model replica: loaded on its first shard, reused for every later one."""

    def __init__(self, load: Load, compute: Compute) -> None:
        self.load, self.compute, self.model = load, compute, None

    def run(self, i: int) -> tuple[int, Rows]:
        if self.model is None:
            use_assigned_cpus()
            self.model = self.load()
        return i, self.compute(self.model, i)


def use_assigned_cpus() -> None:
    """Give torch one thread per CPU Ray assigned to this worker. Ray sets OMP_NUM_THREADS for
    a new worker process, but a reused one keeps the thread count torch read when a task with
    fewer CPUs first imported it; without this an actor given both of two CPUs may compute on one."""
    import ray
    import torch

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    if cpus:
        torch.set_num_threads(max(1, int(cpus)))


def shared_cpus(total: float, workers: int) -> float:
    """A worker's CPUs when `num_cpus` is null: the cluster's shared among the workers, at least one.

    >>> shared_cpus(2, 1), shared_cpus(16, 3), shared_cpus(2, 4)
    (2.0, 5.0, 1.0)
    """
    return float(max(1, int(total // workers)))


def start_ray(cfg: ExecutorConfig) -> Any:
    """`ray`, joined to `cfg.address` or to a local cluster started here (once per process)."""
    # Read when the cluster starts: a local cluster reports nothing to anyone.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise UserError("executor.kind: ray needs the cluster extra (pip install 'alignment[cluster]')") from None
    if not ray.is_initialized():
        local = cfg.address is None
        ray.init(address=cfg.address, num_cpus=cfg.local_cpus if local else None, include_dashboard=False,
                 log_to_driver=False, configure_logging=False)
    return ray


def ray_resources(cfg: ExecutorConfig) -> dict[str, Any]:
    """What one Ray actor or task asks for."""
    import ray  # started by the caller (`start_ray`): a null num_cpus shares the cluster's CPUs

    cpus = cfg.num_cpus if cfg.num_cpus is not None else shared_cpus(ray.cluster_resources().get("CPU", 1), cfg.workers)
    ask: dict[str, Any] = {"num_cpus": cpus, "num_gpus": cfg.num_gpus}
    if cfg.memory_gb is not None:
        ask["memory"] = int(cfg.memory_gb * 2**30)
    return ask


def user_error(e: Exception) -> Exception:
    """A worker's `UserError` as itself (a bad input is one line wherever it was found), else `e`."""
    return e.cause if isinstance(getattr(e, "cause", None), UserError) else e


def fitting_workers(workers: int, ask: dict[str, Any], total: dict[str, float]) -> int:
    """How many of `workers` replicas, each asking `ask`, the cluster's `total` resources hold at
    once (at least one: an autoscaling cluster may still grow to place it).

    >>> fitting_workers(8, {"num_gpus": 4, "num_cpus": 1}, {"GPU": 8.0, "CPU": 16.0})
    2
    >>> fitting_workers(3, {"num_gpus": 0, "num_cpus": 1, "memory": 2**30}, {"CPU": 2.0, "memory": 8 * 2**30})
    2
    """
    n = workers
    for key, name in (("num_gpus", "GPU"), ("num_cpus", "CPU"), ("memory", "memory")):
        if ask.get(key):
            n = min(n, int(total.get(name, 0) // ask[key]))
    return max(n, 1)


def _on_ray(cfg: ExecutorConfig, missing: list[int], path_of: Callable[[int], Path], load: Load,
            compute: Compute, done: Callable[[], None]) -> None:
    ray = start_ray(cfg)
    from ray.util import ActorPool

    ask = {**ray_resources(cfg), "max_restarts": cfg.max_retries, "max_task_retries": cfg.max_retries}
    # Only replicas the cluster can place at once: ActorPool gives every actor a shard up front, and
    # one waiting for resources held by the others until the stage ends would never start.
    workers = min(fitting_workers(cfg.workers, ask, ray.cluster_resources()), len(missing))
    actors = [ray.remote(Replica).options(**ask).remote(load, compute) for _ in range(workers)]
    try:
        for i, rows in ActorPool(actors).map_unordered(lambda a, i: a.run.remote(i), missing):
            write_parquet(path_of(i), rows)  # this process stays the one writer of the run store
            done()
    except ray.exceptions.RayTaskError as e:  # a bad input inside a worker is still one line
        raise user_error(e) from None
    finally:
        for a in actors:
            ray.kill(a)  # free the replicas' GPUs and memory for the next stage


# --------------------------------------------------------------------------------------- slurm


class ShardGroup:
    """One array task: load the model once, write each of its shards not already written.

    Requeued after preemption or a timeout (`checkpoint`), it runs again with the same shards and
    skips the ones on disk, exactly as a resumed local run does.
    """

    def __init__(self, path_of: Callable[[int], Path], load: Load, compute: Compute) -> None:
        self.path_of, self.load, self.compute = path_of, load, compute

    def __call__(self, indices: list[int]) -> int:
        model = None
        for i in indices:
            if self.path_of(i).exists():
                continue
            if model is None:
                model = self.load()
            write_parquet(self.path_of(i), self.compute(model, i))
        return len(indices)

    def checkpoint(self, indices: list[int]) -> Any:
        import submitit

        return submitit.helpers.DelayedSubmission(self, indices)


def groups(missing: list[int], size: int) -> list[list[int]]:
    """Consecutive groups of at most `size` shard indices, one per array task.

    >>> groups([0, 1, 2, 5, 6], 2)
    [[0, 1], [2, 5], [6]]
    """
    return [missing[k : k + size] for k in range(0, len(missing), size)]


def slurm_executor(cfg: ExecutorConfig, folder: Path) -> Any:
    """A submitit executor for job arrays whose tasks each ask for `cfg`'s resources (pickles and
    logs in `folder`)."""
    try:
        import submitit
    except ImportError:
        raise UserError("executor.kind: slurm needs the cluster extra (pip install 'alignment[cluster]')") from None
    ex = submitit.AutoExecutor(folder=folder, cluster=None if cfg.cluster == "slurm" else "local")
    params: dict[str, Any] = {"timeout_min": cfg.time_min, "gpus_per_node": int(cfg.num_gpus),
                              "cpus_per_task": max(1, math.ceil(cfg.num_cpus or 1)), "slurm_array_parallelism": cfg.workers}
    if cfg.memory_gb is not None:
        params["mem_gb"] = cfg.memory_gb
    if cfg.partition is not None:
        params["slurm_partition"] = cfg.partition
    ex.update_parameters(**params)
    return ex


def _on_slurm(cfg: ExecutorConfig, missing: list[int], path_of: Callable[[int], Path], load: Load,
              compute: Compute, done: Callable[[], None]) -> None:
    folder = path_of(missing[0]).parent.parent / "submitit"  # logs and pickles beside the shards
    ex = slurm_executor(cfg, folder)
    parts = groups(missing, cfg.shards_per_task)
    jobs = ex.map_array(ShardGroup(path_of, load, compute), parts)
    for job, part in zip(jobs, parts, strict=True):
        job.result()  # raises the task's own error; requeues are submitit's
        for _ in part:
            done()
    lost = [i for i in missing if not path_of(i).exists()]
    if lost:
        raise UserError(f"executor slurm: shards {lost[:5]} are missing after their array tasks finished "
                        f"(is {folder.parent} on a file system the nodes share?)")
