"""Whole tasks on an executor: `alignment sweep --executor ray|slurm` runs each seed's run as one.

`run_each(items, fn, done, folder, cfg)` calls `fn(item)` for every item:

- `local`: here, one after another; the first error stops the rest (what `sweep` always did).
- `ray`: one Ray task per item, each asking for `num_gpus` / `num_cpus` / `memory_gb`, at most
  `workers` at once; a task whose worker dies is retried (`max_retries`).
- `slurm`: one submitit array task per item with the partition, GPUs, memory and time limit of
  `cfg`, at most `workers` running at once (pickles and logs in `folder`). A preempted or
  timed-out task is requeued when `fn` has a submitit `checkpoint` method.

`done(result)` is called on this process as each item finishes, so the caller can write what it
has so far. Under ray and slurm an item that fails does not stop the others: every item runs, and
the first error is raised after the last one ends. Nothing here schedules; Ray and submitit do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from alignment.executor import (
    ExecutorConfig,
    ray_resources,
    slurm_executor,
    start_ray,
    use_assigned_cpus,
    user_error,
)

T = TypeVar("T")
R = TypeVar("R")


def run_each(items: list[T], fn: Callable[[T], R], done: Callable[[R], None], folder: Path, cfg: ExecutorConfig) -> None:
    """`done(fn(item))` for every item, each a whole task on `cfg` (see the module docstring)."""
    if cfg.kind == "ray":
        errors = _each_on_ray(cfg, items, fn, done)
    elif cfg.kind == "slurm":
        errors = _each_on_slurm(cfg, items, fn, done, folder)
    else:
        for item in items:
            done(fn(item))
        return
    if errors:
        raise errors[0]


def _call_on_ray(fn: Callable[[T], R], item: T) -> R:
    use_assigned_cpus()  # a reused Ray worker keeps an earlier task's torch thread count
    return fn(item)


def _each_on_ray(cfg: ExecutorConfig, items: list[T], fn: Callable[[T], R], done: Callable[[R], None]) -> list[Exception]:
    ray = start_ray(cfg)
    task = ray.remote(_call_on_ray).options(**ray_resources(cfg), max_retries=cfg.max_retries)
    todo, running, errors = list(items), {}, []
    try:
        while todo or running:
            while todo and len(running) < cfg.workers:
                item = todo.pop(0)
                running[task.remote(fn, item)] = item
            (ref,), _ = ray.wait(list(running), num_returns=1)
            running.pop(ref)
            try:
                result = ray.get(ref)
            except ray.exceptions.RayError as e:
                errors.append(user_error(e))
                continue
            done(result)
    finally:
        for ref in running:  # interrupted: stop what is still running
            ray.cancel(ref, force=True)
    return errors


def _each_on_slurm(cfg: ExecutorConfig, items: list[T], fn: Callable[[T], R], done: Callable[[R], None],
                   folder: Path) -> list[Exception]:
    jobs = slurm_executor(cfg, folder).map_array(fn, items)
    errors: list[Exception] = []
    for job in jobs:  # in item order; requeues are submitit's
        try:
            result: Any = job.result()
        except Exception as e:  # noqa: BLE001 - reported after every other task has ended
            errors.append(e)
            continue
        done(result)
    return errors
