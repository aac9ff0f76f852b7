"""Executors (`alignment.executor`): build → generate → attribute → score → ack (an LLM judge) on
the tiny models gives the same rows locally, on a local Ray cluster (2 CPUs) and as submitit job
arrays (its local executor); a Ray worker killed in the middle of a shard is restarted and the
rows stay the same; `ack` judges the batches of one judge call and resumes from its shards; the
executor is in no stage key; `--executor` / `--address` win over the config."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment.cli.flags import with_executor
from alignment.config import from_dict
from alignment.errors import UserError
from alignment.executor import ExecutorConfig, ShardGroup, executing, groups
from alignment.run_config import RunConfig, load_config
from alignment.runner import get_stage, prepare_run_dir, run_all, stage_key
from alignment.stages import ack as ack_stage
from alignment.store import RunDir

STAGES = ["build", "generate", "attribute", "score", "ack", "audit"]
# Two CPUs at most: a local cluster on a shared CI machine.
RAY = {"kind": "ray", "local_cpus": 2, "workers": 1, "num_cpus": 1}


def write_config(path: Path, llama: Path, classifier: Path, executor: dict | None = None) -> Path:
    data = {
        "name": "tiny",
        "task": {"name": "mathbook", "source": "synthetic", "splits": ["test"], "n_examples": 2, "seed": 0},
        "generation": {"model": str(llama), "n_samples": 2, "max_new_tokens": 8, "batch_size": 2,  # 4 shards
                       "device": "cpu", "dtype": "float32", "seed": 0},
        "attribution": {"receipts": False},
        "reward": {"backend": "classifier", "model": str(classifier), "device": "cpu", "dtype": "float32"},
        # The tiny policy as an LLM judge: one judge replica per worker, like a 70B judge on GPUs.
        "judge": {"name": "llm", "model": str(llama), "max_new_tokens": 6, "batch_size": 2, "device": "cpu",
                  "dtype": "float32"},
        # The policy on transformed prompts: audit's own sharded sampling (one transformation, 2 samples).
        "audit": {"enabled": True, "evaluators": ["policy"], "transformations": ["option_order"], "n_samples": 2},
        "executor": executor or {},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def run_pipeline(tmp: Path, llama: Path, classifier: Path, executor: dict | None = None) -> RunDir:
    cfg = load_config(write_config(tmp / "config.yaml", llama, classifier, executor))
    run = prepare_run_dir(cfg, tmp / "run")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ack_stage, "SHARD_RESPONSES", 2)  # ack: 4 shards of one judge batch (2) each
        run_all(cfg, run, quiet=True, stages=STAGES)
    return run


def assert_same_rows(a: RunDir, b: RunDir) -> None:
    for stage in ("generate", "score", "ack"):
        pd.testing.assert_frame_equal(a.read(stage), b.read(stage))
    pd.testing.assert_frame_equal(a.read("audit", "responses.parquet"), b.read("audit", "responses.parquet"))
    assert len(a.read("generate")) == 2 * 2 * 2 and len(a.read("score")) > 0 and len(a.read("ack")) == 8
    assert len(list((b.stage("ack") / "shards").glob("part-*.parquet"))) == 4


@pytest.fixture(scope="module")
def local_run(tmp_path_factory, tiny_llama_dir, tiny_classifier_dir) -> RunDir:
    return run_pipeline(tmp_path_factory.mktemp("local"), tiny_llama_dir, tiny_classifier_dir)


@pytest.fixture(scope="module")
def ray_cluster():
    pytest.importorskip("ray")
    from ray import cloudpickle  # Ray's own copy

    from alignment.executor import start_ray

    # Workers cannot import this test module: ship its classes by value.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray = start_ray(ExecutorConfig(**RAY))
    yield ray
    ray.shutdown()


def test_ray_gives_the_local_rows(tmp_path, local_run, ray_cluster, tiny_llama_dir, tiny_classifier_dir) -> None:
    assert_same_rows(local_run, run_pipeline(tmp_path, tiny_llama_dir, tiny_classifier_dir, RAY))


def test_slurm_job_arrays_give_the_local_rows(tmp_path, local_run, tiny_llama_dir, tiny_classifier_dir) -> None:
    pytest.importorskip("submitit")
    slurm = {"kind": "slurm", "cluster": "local", "shards_per_task": 2, "time_min": 10}  # 2 array tasks for generate
    run = run_pipeline(tmp_path, tiny_llama_dir, tiny_classifier_dir, slurm)
    assert_same_rows(local_run, run)
    for stage in ("generate", "ack"):  # they really went through submitit
        assert list((run.stage(stage) / "submitit").glob("*_0_log.out"))


class DiesOnce:
    """The tiny policy, except that the first batch it finishes kills its own worker process
    before the shard is returned (`marker` records that it happened)."""

    def __init__(self, cfg, marker: Path) -> None:
        from alignment.generation.base import make_generator

        self.gen, self.marker = make_generator(cfg), marker

    def generate(self, chats, seeds, greedy=False):
        texts = self.gen.generate(chats, seeds, greedy)
        if not self.marker.exists():
            self.marker.touch()
            os._exit(1)  # the worker dies mid-shard: nothing written, nothing returned
        return texts


def test_a_ray_worker_killed_mid_shard_gives_the_same_rows(tmp_path, local_run, ray_cluster, tiny_llama_dir) -> None:
    from alignment.generation.base import select_splits
    from alignment.generation.sampling import run_generation

    cfg = load_config(write_config(tmp_path / "c.yaml", tiny_llama_dir, tiny_llama_dir))
    examples, marker = select_splits(local_run.read("build"), cfg.generation.splits), tmp_path / "died"
    with executing(ExecutorConfig(**RAY)):
        df = run_generation(examples, cfg.generation, tmp_path / "shards", quiet=True,
                            generator=lambda: DiesOnce(cfg.generation, marker))
    assert marker.exists()  # a worker did die
    assert len(list((tmp_path / "shards").glob("part-*.parquet"))) == 4
    pd.testing.assert_frame_equal(df, local_run.read("generate"))


def test_ack_shards_judge_the_batches_of_one_judge_call(tmp_path, local_run, tiny_llama_dir, monkeypatch) -> None:
    """Shards of whole judge batches: the judge model sees the same batches (so the same padding
    and the same greedy verdicts) as when every response was judged in one call, what `ack` did
    before it had shards; the rows are those of that one call."""
    import shutil

    from alignment.context import Context
    from alignment.generation.hf import TransformersGenerator
    from alignment.judge import make_judge
    from alignment.tasks import TASKS

    batches: list[list[str]] = []
    real = TransformersGenerator._decode
    monkeypatch.setattr(TransformersGenerator, "_decode",
                        lambda self, prompts, *a: batches.append(prompts) or real(self, prompts, *a))
    cfg = load_config(write_config(tmp_path / "c.yaml", tiny_llama_dir, tiny_llama_dir)).judge
    resp = local_run.read("generate")
    verdicts = make_judge(cfg).judge("mathbook", resp["text"].tolist())
    one_call, batches_of_one_call = resp[["example_id", "variant", "sample"]].assign(
        ack=[v.ack for v in verdicts], ack_raw=[v.raw for v in verdicts], ack_parsed=[v.parsed for v in verdicts]), batches[:]
    batches.clear()
    run = RunDir(tmp_path / "run")
    shutil.copytree(local_run.stage("generate"), run.stage("generate"), dirs_exist_ok=True)
    monkeypatch.setattr(ack_stage, "SHARD_RESPONSES", 2)
    ack_stage.ack(cfg, Context(run, TASKS.get("mathbook"), quiet=True))
    assert len(batches) == 4 and batches == batches_of_one_call
    pd.testing.assert_frame_equal(run.read("ack"), one_call)
    pd.testing.assert_frame_equal(local_run.read("ack"), one_call)


class Judged:
    """The keyword judge, recording what it judges; it fails on its `fail_at`-th call (an interruption)."""

    def __init__(self, seen: list[str], fail_at: int | None = None) -> None:
        from alignment.judge.keyword import KeywordJudge

        self.judge_, self.seen, self.fail_at, self.calls = KeywordJudge(), seen, fail_at, 0

    def judge(self, task, responses):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("interrupted")  # stopped in the middle of the stage
        self.seen.extend(responses)
        return self.judge_.judge(task, responses)


def test_ack_resumes_from_its_shards(tmp_path, local_run, monkeypatch) -> None:
    """An interrupted `ack` computes only its missing shards when rerun, and a lost shard is
    recomputed alone; the rows are those of an uninterrupted run."""
    import shutil

    from alignment.context import Context
    from alignment.judge import JudgeConfig
    from alignment.tasks import TASKS

    run = RunDir(tmp_path)
    shutil.copytree(local_run.stage("generate"), run.stage("generate"), dirs_exist_ok=True)
    texts = run.read("generate")["text"].tolist()
    ctx, cfg = Context(run, TASKS.get("mathbook"), quiet=True), JudgeConfig(name="keyword", batch_size=2)
    monkeypatch.setattr(ack_stage, "SHARD_RESPONSES", 2)  # 4 shards of 2 responses
    seen: list[str] = []
    monkeypatch.setattr(ack_stage, "make_judge", lambda c: Judged(seen, fail_at=3))
    with pytest.raises(RuntimeError, match="interrupted"):
        ack_stage.ack(cfg, ctx)
    parts = sorted((run.stage("ack") / "shards").glob("part-*.parquet"))
    assert [p.name for p in parts] == ["part-00000.parquet", "part-00001.parquet"] and seen == texts[:4]
    written = {p.name: p.stat().st_mtime_ns for p in parts}

    seen.clear()
    monkeypatch.setattr(ack_stage, "make_judge", lambda c: Judged(seen))
    ack_stage.ack(cfg, ctx)
    assert seen == texts[4:]  # shards 2 and 3 only
    assert {p.name: p.stat().st_mtime_ns for p in parts} == written  # 0 and 1 left as they were
    first = run.read("ack")

    (run.stage("ack") / "shards" / "part-00002.parquet").unlink()  # a shard lost
    seen.clear()
    ack_stage.ack(cfg, ctx)
    assert seen == texts[4:6]
    pd.testing.assert_frame_equal(run.read("ack"), first)
    seen.clear()
    monkeypatch.setattr(ack_stage, "SHARD_RESPONSES", 256)  # the shipped size: one shard, the same rows
    ack_stage.ack(JudgeConfig(name="keyword"), Context(RunDir(tmp_path), TASKS.get("mathbook"), quiet=True))
    pd.testing.assert_frame_equal(run.read("ack"), first)
    assert seen == texts


def test_a_requeued_array_task_skips_the_shards_it_wrote(tmp_path) -> None:
    computed: list[int] = []

    def compute(model, i):
        computed.append(i)
        return [{"i": i, "model": model}]

    task = ShardGroup(lambda i: tmp_path / f"part-{i:05d}.parquet", lambda: "m", compute)
    task([0, 1])
    assert computed == [0, 1]
    (tmp_path / "part-00001.parquet").unlink()  # preempted after shard 0
    task([0, 1])
    assert computed == [0, 1, 1]
    assert groups([3, 4, 7], 8) == [[3, 4, 7]]


def test_the_executor_is_in_no_stage_key(tmp_path, tiny_llama_dir) -> None:
    """So a run started locally resumes on Ray or SLURM from the shards it has."""
    run = RunDir(tmp_path)
    local = from_dict(RunConfig, {"generation": {"model": str(tiny_llama_dir)}})
    ray = from_dict(RunConfig, {"generation": {"model": str(tiny_llama_dir)},
                                "executor": {**RAY, "stages": {"score": {"num_gpus": 2}}}})
    for name in ("build", "generate", "score", "ack", "dpo-eval"):
        assert stage_key(get_stage(name), local, run) == stage_key(get_stage(name), ray, run)


def test_the_flags_win_over_the_config_and_bad_values_are_one_line(tmp_path) -> None:
    from alignment.cli import build_parser

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"executor": {"kind": "slurm", "partition": "gpu"}}))
    args = build_parser().parse_args(["run", str(path), "--set", "executor.kind=local", "--executor", "ray",
                                      "--address", "auto"])
    cfg = with_executor(load_config(args.config, args.overrides), args)
    assert (cfg.executor.kind, cfg.executor.address, cfg.executor.partition) == ("ray", "auto", "gpu")
    args = build_parser().parse_args(["run", str(path), "--address", "auto"])
    with pytest.raises(UserError, match="--address: joins a Ray cluster"):
        with_executor(load_config(args.config, args.overrides), args)
    with pytest.raises(UserError, match="executor.kind: 'rey' is not allowed.*did you mean 'ray'"):
        load_config(None, ["executor.kind=rey"])
    with pytest.raises(UserError, match="executor.num_gpus: slurm allocates whole GPUs"):
        load_config(None, ["executor.kind=slurm", "executor.num_gpus=0.5"])


def test_each_stage_runs_with_its_own_resources(tmp_path, monkeypatch, tiny_llama_dir, tiny_classifier_dir) -> None:
    """`executor.stages.score` changes what score's shards ask for, and nothing else's."""
    from alignment.executor import SHARDED, current
    from alignment.generation import sampling
    from alignment.runner import STAGE_NAMES
    from alignment.stages import score

    assert set(SHARDED) <= set(STAGE_NAMES)

    seen: dict[str, ExecutorConfig] = {}
    for stage, module in (("generate", sampling), ("score", score)):

        def recorded(*args, stage=stage, real=module.map_shards, **kwargs):
            seen[stage] = current()  # what run_shards will use
            return real(*args, **kwargs)

        monkeypatch.setattr(module, "map_shards", recorded)
    stages = {"score": {"workers": 2, "num_cpus": 2, "memory_gb": 3}}
    run_pipeline(tmp_path, tiny_llama_dir, tiny_classifier_dir, {"num_cpus": 1, "stages": stages})
    assert (seen["generate"].workers, seen["generate"].num_cpus, seen["generate"].memory_gb) == (1, 1.0, None)
    assert (seen["score"].workers, seen["score"].num_cpus, seen["score"].memory_gb) == (2, 2.0, 3.0)


def test_the_stage_resources_example_in_the_docs_loads() -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "cluster.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    executor = from_dict(RunConfig, yaml.safe_load(block)).executor
    assert executor.for_stage("score").num_gpus == 0.5 and executor.for_stage("generate").num_gpus == 1


@pytest.mark.parametrize(("override", "message"), [
    ("executor.stages.scor.num_gpus=1", r"executor.stages: 'scor' is not a stage with shards \(did you mean 'score'\?\)"),
    ("executor.stages.bon.num_gpus=1", "executor.stages: 'bon' is not a stage with shards; those are generate, score, ack"),
    ("executor.stages.score.num_gpu=1", r"executor.stages.score: unknown key 'num_gpu' \(did you mean 'num_gpus'\?\)"),
    ("executor.stages.score.partition=gpu", "executor.stages.score: unknown key 'partition'; a stage sets workers"),
    ("executor.stages.score.workers=0", "executor.stages.score.workers: must be at least 1"),
    ("executor.stages.score=2", "executor.stages.score: expected a mapping"),
    ("executor.stages.score.num_gpus=0.5", "executor.stages.score.num_gpus: slurm allocates whole GPUs"),
])
def test_bad_stage_resources_are_one_line(override: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        load_config(None, ["executor.kind=slurm", override])


def test_local_needs_neither_ray_nor_submitit(tmp_path) -> None:
    """`local` imports neither: the cluster extra stays optional."""
    import subprocess

    code = ("import sys; from alignment.executor import run_shards; "
            "run_shards([0], lambda i: __import__('pathlib').Path(sys.argv[1]), lambda: 1, lambda m, i: [{'x': m}]); "
            "assert 'ray' not in sys.modules and 'submitit' not in sys.modules")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "p.parquet")], check=True, timeout=120)
    assert (tmp_path / "p.parquet").exists()


# ------------------------------------------------------------------------ sweep fan-out (seeds)

SWEEP_SEEDS = "0,3"


def sweep(tmp: Path, llama: Path, *flags: str, executor: dict | None = None) -> Path:
    """`alignment sweep` of a tiny config over two seeds; returns the sweep dir."""
    from alignment.cli import main

    cfg = {"name": "tiny", "task": {"name": "mathbook", "source": "synthetic", "n_examples": 2},
           "generation": {"model": str(llama), "n_samples": 2, "max_new_tokens": 6, "batch_size": 8},
           "reward": {"backend": "judge", "model": str(llama), "max_length": 2048},
           "bon": {"ns": [1, 2]}, "executor": executor or {}}
    (tmp / "tiny.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp / "sweep"
    assert main(["sweep", str(tmp / "tiny.yaml"), "--seeds", SWEEP_SEEDS, "--out", str(out), "--quiet", *flags]) == 0
    return out


def sweep_table(out: Path) -> pd.DataFrame:
    """sweep.csv without the seconds each run took (measured, so never equal across runs)."""
    df = pd.read_csv(out / "sweep.csv")
    assert (df["seconds"] > 0).all() and sorted(df["seed"].unique()) == [0, 3]
    return df.drop(columns="seconds")


def ran_elsewhere(out: Path) -> None:
    """Each seed's run held its lock in another process, and ran its stages with the local executor."""
    from alignment.store import LOCK_FILE

    for seed in (0, 3):
        assert int((out / f"seed-{seed}" / LOCK_FILE).read_text()) != os.getpid()
        assert yaml.safe_load((out / f"seed-{seed}" / "config.yaml").read_text())["executor"]["kind"] == "local"


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory, tiny_llama_dir) -> pd.DataFrame:
    return sweep_table(sweep(tmp_path_factory.mktemp("sweep-local"), tiny_llama_dir))


def test_a_sweep_fanned_out_on_ray_gives_the_local_table_and_resumes(tmp_path, local_sweep, ray_cluster,
                                                                      tiny_llama_dir) -> None:
    ray = {"local_cpus": 2, "workers": 2, "num_cpus": 1}  # both seeds at once on the 2-CPU cluster
    out = sweep(tmp_path, tiny_llama_dir, "--executor", "ray", executor=ray)
    pd.testing.assert_frame_equal(sweep_table(out), local_sweep)
    ran_elsewhere(out)
    # Resume: a seed run missing its last stages finishes them only; the table is the same again.
    generated = (out / "seed-3" / "generate" / "manifest.json").read_text()
    for stage in ("bon", "report"):
        (out / "seed-3" / stage / "manifest.json").unlink()
    (out / "sweep.csv").unlink()
    sweep(tmp_path, tiny_llama_dir, "--executor", "ray", executor=ray)
    assert (out / "seed-3" / "generate" / "manifest.json").read_text() == generated  # not rerun
    assert (out / "seed-3" / "bon" / "manifest.json").is_file()
    pd.testing.assert_frame_equal(sweep_table(out), local_sweep)


def test_a_sweep_fanned_out_as_a_slurm_array_gives_the_local_table(tmp_path, local_sweep, tiny_llama_dir) -> None:
    pytest.importorskip("submitit")
    slurm = {"kind": "slurm", "cluster": "local", "workers": 2, "time_min": 10}
    out = sweep(tmp_path, tiny_llama_dir, executor=slurm)  # the config's executor.kind, no flag
    pd.testing.assert_frame_equal(sweep_table(out), local_sweep)
    ran_elsewhere(out)
    assert len(list((out / "submitit").glob("*_log.out"))) == 2  # one array task per seed


def fails_on_one(item: int) -> int:
    if item == 1:
        raise UserError("item 1: bad input")
    return 10 * item


def test_a_failed_task_does_not_stop_the_others_and_is_one_line(tmp_path, ray_cluster) -> None:
    from alignment.runtime.fanout import run_each

    got: list[int] = []
    with pytest.raises(UserError, match="^item 1: bad input$"):
        run_each([0, 1, 2], fails_on_one, got.append, tmp_path, ExecutorConfig(**{**RAY, "workers": 2}))
    assert sorted(got) == [0, 20]
    got.clear()
    with pytest.raises(UserError, match="item 1"):  # local: stops at the first failure, as sweep always did
        run_each([0, 1, 2], fails_on_one, got.append, tmp_path, ExecutorConfig())
    assert got == [0]


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def test_a_ray_worker_computes_on_the_cpus_it_was_given(tmp_path, ray_cluster) -> None:
    """With `num_cpus` null the one worker of a 2-CPU local cluster gets both CPUs, and its torch
    uses both, even in a Ray worker process reused after a 1-CPU task first imported torch."""
    one = ray_cluster.remote(_threads).options(num_cpus=1)
    assert ray_cluster.get(one.remote()) == 1  # what a 1-CPU task gets, left behind in a reused worker
    cfg = ExecutorConfig(**{**RAY, "num_cpus": None})
    from alignment.executor import run_shards

    run_shards([0, 1], lambda i: tmp_path / f"part-{i}.parquet", _threads, lambda threads, i: [{"i": i, "threads": threads}],
               cfg=cfg)
    assert pd.read_parquet(tmp_path / "part-1.parquet")["threads"].tolist() == [2]
    cfg = ExecutorConfig(**RAY)  # an explicit 1 CPU per worker: one thread
    run_shards([2], lambda i: tmp_path / f"part-{i}.parquet", _threads, lambda threads, i: [{"i": i, "threads": threads}], cfg=cfg)
    assert pd.read_parquet(tmp_path / "part-2.parquet")["threads"].tolist() == [1]


def test_a_model_that_cannot_load_draws_no_progress_bar_before_its_error(tmp_path, capsys) -> None:
    """The local executor loads before the bar: the error is the only thing on stderr."""
    from alignment.executor import map_shards

    def load() -> None:
        raise UserError("cannot load model 'nowhere'")

    capsys.readouterr()
    with pytest.raises(UserError, match="cannot load model"):
        map_shards(tmp_path / "shards", 3, load, lambda model, i: [{"x": i}], "generate", "batch", quiet=False)
    assert capsys.readouterr().err == ""
    parts = map_shards(tmp_path / "shards", 2, lambda: 10, lambda model, i: [{"x": model + i}], "generate", "batch", quiet=True)
    assert [p["x"].tolist() for p in parts] == [[10], [11]]
