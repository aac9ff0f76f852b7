"""The run store and the build → generate pipeline on the tiny random Llama: artifacts, manifests,
skipping finished stages, resuming an interrupted `generate` (deleted shards, and a real SIGKILL)
without duplicate rows or regenerated shards, and same seed → same rows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment import cli
from alignment.generation import sampling as gen_stage
from alignment.run_config import load_config
from alignment.runner import STAGE_NAMES, prepare_run_dir, run_all, run_stage
from alignment.stages import generate as generate_stage
from alignment.store import RunDir, read_parquet, write_parquet

KEY = ["example_id", "variant", "sample"]
RESPONSE_COLUMNS = {"example_id", "variant", "sample", "text", "pred", "valid", "correct"}
EXAMPLE_COLUMNS = {"id", "unit_id", "split", "system", "query", "cf_query", "sources", "answer", "options", "category"}
MANIFEST_KEYS = {"stage", "key", "package_version", "git_commit", "models", "rows", "seconds"}


def write_config(path: Path, model_dir: Path, **generation) -> Path:
    data = {
        "name": "tiny",
        "task": {"name": "mathbook", "source": "synthetic", "splits": ["test"], "n_examples": 2, "seed": 0},
        "generation": {
            "model": str(model_dir),
            "n_samples": 2,
            "max_new_tokens": 8,
            "batch_size": 2,  # one prompt (2 samples) per batch: 4 shards
            "device": "cpu",
            "dtype": "float32",
            "seed": 0,
            **generation,
        },
    }
    path.write_text(yaml.safe_dump(data))
    return path


def run_foundation(cfg_path: Path, out: Path, overrides: list[str] | None = None) -> RunDir:
    cfg = load_config(cfg_path, overrides)
    run = prepare_run_dir(cfg, out)
    run_all(cfg, run, quiet=True, stages=["build", "generate"])
    return run


def shard_times(run: RunDir) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in sorted((run.stage("generate") / "shards").glob("part-*.parquet"))}


def manifest_text(run: RunDir, stage: str) -> str:
    return (run.stage(stage) / "manifest.json").read_text()


def check_responses(run: RunDir, n_examples: int, n_samples: int) -> pd.DataFrame:
    ex = run.read("build")
    df = run.read("generate")
    assert RESPONSE_COLUMNS <= set(df.columns)
    assert len(df) == n_examples * 2 * n_samples
    assert not df.duplicated(KEY).any()
    assert set(df["variant"]) == {"orig", "cf"}
    assert sorted(set(df["sample"])) == list(range(n_samples))
    assert set(df["example_id"]) == set(ex["id"])
    answers = dict(zip(ex["id"], ex["answer"], strict=True))
    for r in df.to_dict("records"):
        valid = r["pred"] is not None and not pd.isna(r["pred"])
        assert r["valid"] == valid
        assert r["correct"] == (valid and int(r["pred"]) == int(answers[r["example_id"]]))
    return df


class CountingGenerators:
    """Wraps the real `make_generator` and counts the batches it generates."""

    def __init__(self, monkeypatch) -> None:
        self.batches = 0
        real = gen_stage.make_generator

        def make(cfg):
            g = real(cfg)
            inner = g.generate

            def generate(*a, **k):
                self.batches += 1
                return inner(*a, **k)

            g.generate = generate
            return g

        monkeypatch.setattr(generate_stage, "make_generator", make)


# ------------------------------------------------------------------------------- full run


def test_full_alignment_run(tmp_path: Path, tiny_llama_dir: Path, tiny_classifier_dir: Path) -> None:
    """`alignment run CONFIG` end to end on tiny models; a second run skips every stage."""
    cfg = write_config(tmp_path / "tiny.yaml", tiny_llama_dir)
    out = tmp_path / "run"
    argv = [
        "run", str(cfg), "--out", str(out), "--quiet",
        "--set", "reward.backend=classifier", "--set", f"reward.model={tiny_classifier_dir}",
        "--set", "reward.device=cpu", "--set", "reward.dtype=float32", "--set", "bon.ns=[1,2]",
    ]
    assert cli.main(argv) == 0
    run = RunDir(out)
    assert (out / "config.yaml").is_file()
    build = run.read("build")
    assert EXAMPLE_COLUMNS <= set(build.columns) and len(build) == 2
    check_responses(run, 2, 2)
    ran = [s for s in STAGE_NAMES if run.manifest(s) is not None]
    assert ran[:2] == ["build", "generate"]
    for name in ran:
        m = run.manifest(name)
        assert MANIFEST_KEYS <= set(m) and m["stage"] == name
    assert run.manifest("generate")["models"]["policy"] == str(tiny_llama_dir)
    assert run.manifest("generate")["rows"]["responses"] == 8
    before = {name: manifest_text(run, name) for name in ran}
    started = time.time()
    assert cli.main(argv) == 0
    assert time.time() - started < 30
    assert {name: manifest_text(run, name) for name in ran} == before


# ------------------------------------------------------------------------- build + generate


def test_build_and_generate_artifacts(tmp_path: Path, tiny_llama_dir: Path) -> None:
    run = run_foundation(write_config(tmp_path / "c.yaml", tiny_llama_dir), tmp_path / "run")
    for stage in ("build", "generate"):
        assert (run.stage(stage) / "data.parquet").is_file()
        m = json.loads(manifest_text(run, stage))
        assert MANIFEST_KEYS <= set(m) and m["stage"] == stage
        assert m["package_version"] and isinstance(m["seconds"], float | int)
    assert run.manifest("build")["rows"]["examples"] == 2
    df = check_responses(run, 2, 2)
    assert len(shard_times(run)) == 4
    assert not list(run.path.rglob("*.tmp"))
    # Artifacts are Hugging Face datasets Parquet files.
    import datasets

    assert datasets.Dataset.from_parquet(str(run.stage("generate") / "data.parquet")).num_rows == len(df)


def test_rerun_skips_finished_stages(tmp_path: Path, tiny_llama_dir: Path, monkeypatch) -> None:
    cfg = write_config(tmp_path / "c.yaml", tiny_llama_dir)
    run = run_foundation(cfg, tmp_path / "run")
    before = {s: manifest_text(run, s) for s in ("build", "generate")}
    data_before = (run.stage("build") / "data.parquet").stat().st_mtime_ns
    shards = shard_times(run)

    def boom(cfg):
        raise AssertionError("a finished stage must not load the model")

    monkeypatch.setattr(generate_stage, "make_generator", boom)
    started = time.time()
    run_foundation(cfg, tmp_path / "run")
    assert time.time() - started < 10
    assert {s: manifest_text(run, s) for s in ("build", "generate")} == before
    assert (run.stage("build") / "data.parquet").stat().st_mtime_ns == data_before
    assert shard_times(run) == shards
    assert run_stage("generate", load_config(cfg), run, quiet=True) is False


def test_changed_generation_reruns_generate_only(tmp_path: Path, tiny_llama_dir: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", tiny_llama_dir)
    run = run_foundation(cfg, tmp_path / "run")
    build_before, gen_before = manifest_text(run, "build"), manifest_text(run, "generate")
    run_foundation(cfg, tmp_path / "run", ["generation.n_samples=3"])
    assert manifest_text(run, "build") == build_before
    assert manifest_text(run, "generate") != gen_before
    check_responses(run, 2, 3)
    # A task change reruns build and, through its key, generate.
    run_foundation(cfg, tmp_path / "run", ["generation.n_samples=3", "task.n_examples=1"])
    assert manifest_text(run, "build") != build_before
    check_responses(run, 1, 3)


def test_same_seed_same_rows_in_fresh_run_dirs(tmp_path: Path, tiny_llama_dir: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", tiny_llama_dir)
    a = run_foundation(cfg, tmp_path / "a")
    b = run_foundation(cfg, tmp_path / "b")
    pd.testing.assert_frame_equal(a.read("build"), b.read("build"))
    pd.testing.assert_frame_equal(a.read("generate"), b.read("generate"))
    assert a.manifest("generate")["key"] == b.manifest("generate")["key"]
    c = run_foundation(cfg, tmp_path / "c", ["generation.seed=1"])
    assert c.read("generate")["text"].tolist() != a.read("generate")["text"].tolist()


def test_resume_after_lost_shards(tmp_path: Path, tiny_llama_dir: Path, monkeypatch) -> None:
    """Simulated interruption: the last shards and the manifest are gone; only they are redone."""
    cfg = write_config(tmp_path / "c.yaml", tiny_llama_dir)
    run = run_foundation(cfg, tmp_path / "run")
    reference = run.read("generate")
    shards = shard_times(run)
    names = sorted(shards)
    for name in names[-2:]:
        (run.stage("generate") / "shards" / name).unlink()
    (run.stage("generate") / "manifest.json").unlink()
    (run.stage("generate") / "data.parquet").unlink()
    counter = CountingGenerators(monkeypatch)
    run_foundation(cfg, tmp_path / "run")
    assert counter.batches == 2
    after = shard_times(run)
    assert sorted(after) == names
    assert all(after[n] == shards[n] for n in names[:-2])  # finished shards were not rewritten
    pd.testing.assert_frame_equal(run.read("generate"), reference)


def test_stale_shards_from_another_config_are_discarded(tmp_path: Path, tiny_llama_dir: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", tiny_llama_dir)
    run = run_foundation(cfg, tmp_path / "run")
    (run.stage("generate") / "manifest.json").unlink()  # interrupted...
    run_foundation(cfg, tmp_path / "run", ["generation.seed=5"])  # ...then rerun with another seed
    fresh = run_foundation(cfg, tmp_path / "fresh", ["generation.seed=5"])
    pd.testing.assert_frame_equal(run.read("generate"), fresh.read("generate"))


KILL_SCRIPT = """
import sys, time
import torch
torch.set_num_threads(1)
from alignment.generation import hf
inner = hf.TransformersGenerator.generate
def slow(self, *a, **k):
    time.sleep(0.4)  # widen the window between shard commits
    return inner(self, *a, **k)
hf.TransformersGenerator.generate = slow
from alignment.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_resume_after_sigkill(tmp_path: Path, tiny_llama_dir: Path, monkeypatch) -> None:
    """`kill -9` of `alignment generate` mid-way, then the same command: finished shards are kept,
    the rest is generated, no duplicate rows, and the rows equal an uninterrupted run's."""
    cfg = write_config(tmp_path / "c.yaml", tiny_llama_dir, batch_size=1)
    cfg_data = yaml.safe_load(cfg.read_text())
    cfg_data["task"]["n_examples"] = 4  # 8 prompts → 8 shards
    cfg.write_text(yaml.safe_dump(cfg_data))
    out = tmp_path / "run"
    assert cli.main(["build", str(cfg), "--out", str(out), "--quiet"]) == 0
    shard_dir = out / "generate" / "shards"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, "generate", str(cfg), "--out", str(out), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None and len(list(shard_dir.glob("part-*.parquet"))) < 2:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    run = RunDir(out)
    done = shard_times(run)
    assert run.manifest("generate") is None, "killed before finishing"
    assert 2 <= len(done) < 8, done
    counter = CountingGenerators(monkeypatch)
    assert cli.main(["generate", str(cfg), "--out", str(out), "--quiet"]) == 0
    assert counter.batches == 8 - len(done)
    after = shard_times(run)
    assert len(after) == 8 and all(after[n] == t for n, t in done.items())
    df = check_responses(run, 4, 2)
    fresh = run_foundation(cfg, tmp_path / "fresh")
    pd.testing.assert_frame_equal(df, fresh.read("generate"))


# ------------------------------------------------------------------- generation stage logic


class FakeGenerator:
    """Deterministic texts from the seeds: some answer, some are invalid."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def generate(self, chats, seeds, greedy=False):
        self.calls.append(sum(len(s) for s in seeds))
        return [[self.text(None if greedy else s) for s in ss] for ss in seeds]

    @staticmethod
    def text(seed: int | None) -> str:
        if seed is None:  # a greedy row: the seed draws nothing
            return "greedy: Therefore, the answer is (B)."
        return "no idea" if seed % 3 == 0 else f"Therefore, the answer is ({'ABCDE'[seed % 5]})."


def test_generation_rows_with_a_fake_generator(tmp_path: Path) -> None:
    from alignment.generation import GenerationConfig
    from alignment.tasks import TASKS, TaskConfig

    examples = pd.DataFrame(TASKS.get("mathbook").build(TaskConfig(n_examples=3)))
    cfg = GenerationConfig(n_samples=3, batch_size=4, greedy=True)
    fake = FakeGenerator()
    df = gen_stage.run_generation(examples, cfg, tmp_path / "shards", quiet=True, generator=fake)
    assert len(df) == 3 * 2 * 4 and not df.duplicated(KEY).any()
    # Whole prompts: each prompt's 3 samples and its greedy answer share one batch (one prefill).
    assert fake.calls == [4] * 6
    greedy = df[df["sample"] == -1]
    assert len(greedy) == 6 and greedy["greedy"].all() and greedy["text"].str.startswith("greedy").all()
    assert not df.loc[df["sample"] >= 0, "greedy"].any()
    answers = dict(zip(examples["id"], examples["answer"], strict=True))
    for r in df.to_dict("records"):
        expect = 1 if r["sample"] < 0 else None if r["seed"] % 3 == 0 else r["seed"] % 5
        assert (None if pd.isna(r["pred"]) else int(r["pred"])) == expect
        assert r["valid"] == (expect is not None)
        assert r["correct"] == (expect is not None and expect == answers[r["example_id"]])
    # Parquet keeps pred as integer-or-null even when a whole shard is invalid.
    write_parquet(tmp_path / "all.parquet", df)
    back = read_parquet(tmp_path / "all.parquet")
    assert len(back) == len(df)
    # A second call finds every shard and generates nothing.
    again = gen_stage.run_generation(examples, cfg, tmp_path / "shards", quiet=True, generator=FakeGenerator())
    pd.testing.assert_frame_equal(again, df)
    # A shard that holds other rows than its planned batch (another planner wrote it) is redone.
    shard = tmp_path / "shards" / "part-00000.parquet"
    write_parquet(shard, df.iloc[4:8])
    redo = FakeGenerator()
    fixed = gen_stage.run_generation(examples, cfg, tmp_path / "shards", quiet=True, generator=redo)
    assert redo.calls == [4]
    pd.testing.assert_frame_equal(fixed, df)


def test_stage_keys_follow_the_keyword_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fixed keyword rule must relabel cached responses: the judging stages key on the rules."""
    import alignment.judge.keyword as kw
    from alignment.config import from_dict
    from alignment.run_config import RunConfig
    from alignment.runner import get_stage, stage_key
    from alignment.store import RunDir

    cfg = from_dict(RunConfig, {})
    run = RunDir(Path("/nonexistent"))
    monkeypatch.setattr(kw, "rules_id", lambda task=None: "rules-a")
    ack, score = stage_key(get_stage("ack"), cfg, run), stage_key(get_stage("score"), cfg, run)
    monkeypatch.setattr(kw, "rules_id", lambda task=None: "rules-b")
    assert stage_key(get_stage("ack"), cfg, run) != ack
    assert stage_key(get_stage("score"), cfg, run) == score  # scoring does not judge


def test_an_llm_judged_run_keys_on_its_prompt_not_on_the_keyword_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing a lexicon must not re-judge a run judged by the LLM; editing its prompt must."""
    import alignment.judge.keyword as kw
    import alignment.judge.llm as llm
    from alignment.config import from_dict
    from alignment.run_config import RunConfig
    from alignment.runner import get_stage, stage_key
    from alignment.store import RunDir

    run = RunDir(Path("/nonexistent"))
    llm_cfg = from_dict(RunConfig, {"judge": {"name": "llm"}})
    kw_cfg = from_dict(RunConfig, {"judge": {"name": "keyword"}})
    ens_cfg = from_dict(RunConfig, {"judge": {"name": "ensemble", "members": ["keyword", "llm"]}})

    def keys() -> list[str]:
        return [stage_key(get_stage(s), c, run) for c in (llm_cfg, kw_cfg, ens_cfg) for s in ("ack", "audit", "dpo-eval")]

    before = keys()
    monkeypatch.setattr(kw, "rules_id", lambda task=None: "edited lexicon")
    after_lexicon = keys()
    assert after_lexicon[:3] == before[:3]  # the LLM judge's keys hold
    assert all(a != b for a, b in zip(after_lexicon[3:], before[3:], strict=True))  # keyword and ensemble rerun
    template = llm.judge_prompt_template
    monkeypatch.setattr(llm, "judge_prompt_template", lambda task: template(task) + " edited")
    after_prompt = keys()
    assert all(a != b for a, b in zip(after_prompt[:3], after_lexicon[:3], strict=True))
    assert after_prompt[3:6] == after_lexicon[3:6]  # the keyword judge ignores the LLM prompt
    assert all(a != b for a, b in zip(after_prompt[6:], after_lexicon[6:], strict=True))
