"""`python -m alignment.measure.cluster.projection`: the paper grid's wall time on paper, on a tiny grid.

The doctests of alignment/measure/cluster/*.py run with the suite (`--doctest-modules`).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from test_tasks import GOOD_MATH, bias_dir, write_jsonl

from alignment.measure.cluster.projection import main, stage_wall_s
from alignment.stages import ack as ack_stage
from alignment.stages.ack import shard_size

MATH_CFG = """name: paper_mathbook_tiny
task: {name: mathbook, source: hub, splits: [train, test], n_examples: 0}
generation: {backend: vllm, model: llama-3.1-8b-instruct, n_samples: 4, greedy: true, batch_size: 4, max_new_tokens: 64}
"""
BIAS_CFG = """name: paper_biasqa_tiny
task: {name: biasqa, source: local, data_dir: unused, splits: [train, test], n_examples: 0}
generation: {backend: vllm, model: llama-3.2-3b-instruct, n_samples: 2, greedy: false, batch_size: 4}
"""


def tiny_grid(tmp_path: Path) -> list[str]:
    """Two paper configs (and a DPO snippet, which is no run), AQuA-RAT test only, Winogender."""
    configs = tmp_path / "configs"
    configs.mkdir(parents=True)
    (configs / "paper_mathbook_tiny.yaml").write_text(MATH_CFG)
    (configs / "paper_biasqa_tiny.yaml").write_text(BIAS_CFG)
    (configs / "paper_dpo_tiny.yaml").write_text("dpo: {seeds: [0]}\n")
    write_jsonl(tmp_path / "aqua" / "test.json", GOOD_MATH)
    return ["--configs", str(configs), "--aqua-dir", str(tmp_path / "aqua"),
            "--winogender-dir", str(bias_dir(tmp_path / "wino")), "--aqua-rows", "train=10", "--gpus", "1", "4"]


def fake_run(tmp_path: Path) -> Path:
    """A finished run dir whose generate stage keyed its shards at t0 and wrote three at +5, +8, +11 s."""
    run = tmp_path / "run"
    shards = run / "generate" / "shards"
    shards.mkdir(parents=True)
    (run / "generate" / "manifest.json").write_text(json.dumps({"stage": "generate", "seconds": 12.0}))
    (shards / "key.txt").write_text("k")
    t0 = 1_700_000_000.0
    os.utime(shards / "key.txt", (t0, t0))
    for i, dt in enumerate([5.0, 8.0, 11.0]):
        part = shards / f"part-{i:05d}.parquet"
        part.write_bytes(b"")
        os.utime(part, (t0 + dt, t0 + dt))
    return run


def test_json_projection_of_a_tiny_grid_and_a_run_dir(tmp_path: Path, capsys) -> None:
    out = tmp_path / "projection.json"
    assert main(["--json", "--run", str(fake_run(tmp_path)), "--out", str(out), *tiny_grid(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert out.read_text() == text
    res = json.loads(text)
    grid = {g["task"]: g for g in res["grid"]}
    assert [g["name"] for g in res["grid"]] == ["paper_biasqa_tiny", "paper_mathbook_tiny"]  # the snippet is skipped
    math_ = grid["mathbook"]
    # train: the --aqua-rows figure; test: the four problems built from test.json.
    assert math_["splits"] == {"train": 10, "test": 4} and math_["uncounted_splits"] == ["train"]
    assert (math_["prompts"], math_["responses"], math_["scored_per_rm"]) == (28, 28 * 5, 14 * 15)
    assert grid["biasqa"]["examples"] == 4 and grid["biasqa"]["responses"] == 4 * 2 * 2
    # generate, by hand: 28 prompts of 4 samples + 1 greedy answer, one batch each (5 rows exceed
    # the batch size of 4, and a prompt is never split); 140 sequences x 400 tokens at 749 tokens/s;
    # on 4 GPUs 7 rounds after one load.
    gen = next(d for d in res["detail"] if d["config"] == "paper_mathbook_tiny" and d["name"] == "generate")
    per_shard = 140 * 400 / 749 / 28
    assert gen["shards"] == 28 and math.isclose(gen["per_shard_s"], per_shard)
    load = 60 + 2 * 8.03 / 2.0
    assert math.isclose(gen["hours"]["4"], (load + 7 * per_shard) / 3600)
    assert math.isclose(gen["hours"]["1"], (load + 28 * per_shard) / 3600)
    # The 70B judge needs 4 GPUs: totals with ack do not fit on 1, totals without it do. On 4 GPUs
    # one judge runs: sharded ack takes what one call on one judge took.
    for row in res["scenarios"]:
        assert row["hours"]["1"] is None and row["hours_without_ack"]["1"] > 0
        assert math.isclose(row["hours"]["4"], row["hours_one_judge"]["4"]) and row["hours"]["4"] > row["hours_without_ack"]["4"]
    ack_ = next(d for d in res["detail"] if d["config"] == "paper_mathbook_tiny" and d["name"] == "ack")
    assert ack_["shards"] == math.ceil(140 / shard_size(8)) and ack_["gpus_per_replica"] == 4
    slow, fast = res["scenarios"][0], res["scenarios"][-1]  # 94 and 4,000 tokens/s
    assert slow["hours"]["4"] > fast["hours"]["4"]
    [m] = res["measured"]
    assert (m["stage"], m["shards"], m["first_s"], m["median_later_s"]) == ("generate", 3, 5.0, 3.0)
    assert math.isclose(m["load_est_s"], 2.0) and math.isclose(m["outside_shards_s"], 1.0)


def test_markdown_says_what_is_measured_and_what_is_assumed(tmp_path: Path, capsys) -> None:
    assert main(tiny_grid(tmp_path)) == 0
    md = capsys.readouterr().out
    assert "not a measurement" in md and "python -m alignment.measure.cluster.projection --configs" in md
    assert "| Llama-3.1-8B decode tokens/s at batch 16 | 1 GPU | 4 GPUs |" in md
    assert "train: 10 rows from --aqua-rows" in md and "built from" in md
    assert "issue 41" in md and "| mean response tokens | 400 | assumption" in md
    assert "No run dir given" in md


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    args = tiny_grid(tmp_path)
    assert main([*args, "--aqua-rows", "train"]) == 2
    assert "--aqua-rows: expected SPLIT=N" in capsys.readouterr().err
    assert main([*args, "--aqua-rows", "dev=3"]) == 2  # train has no file and no figure
    err = capsys.readouterr().err
    assert "train.json" in err and err.count("\n") == 1
    assert main([*args, "--run", str(tmp_path / "nowhere")]) == 2
    assert "--run" in capsys.readouterr().err
    bad = fake_run(tmp_path)
    (bad / "generate" / "manifest.json").write_text("{}")
    assert main([*args, "--run", str(bad)]) == 2
    assert "manifest.json" in capsys.readouterr().err


def test_ack_shards_are_the_stage_s_own_and_spread_over_judges(tmp_path: Path, capsys, monkeypatch) -> None:
    # The projection cuts ack as alignment.stages.ack does: 16-response shards give 9 shards of the
    # 140 mathbook responses; 8 GPUs hold two TP=4 judges (5 rounds), 4 GPUs one (9 rounds).
    monkeypatch.setattr(ack_stage, "SHARD_RESPONSES", 16)
    assert main(["--json", *tiny_grid(tmp_path), "--gpus", "4", "8"]) == 0
    res = json.loads(capsys.readouterr().out)
    a = next(d for d in res["detail"] if d["config"] == "paper_mathbook_tiny" and d["name"] == "ack")
    assert a["shards"] == 9
    assert math.isclose(a["hours"]["8"] * 3600, a["load_s"] + 5 * a["per_shard_s"])
    assert math.isclose(a["hours"]["4"] * 3600, a["load_s"] + 9 * a["per_shard_s"])
    # One call on one judge (before adee9c9) does all 9 shards' work after one load, on any GPU count;
    # biasqa's 16 responses are one shard either way.
    row = next(r for r in res["scenarios"] if r["decode_tok_s"] == 749.0)
    assert math.isclose((row["hours_one_judge"]["8"] - row["hours"]["8"]) * 3600, 4 * a["per_shard_s"])
    assert main([*tiny_grid(tmp_path / "md"), "--gpus", "8"]) == 0
    md = capsys.readouterr().out
    assert "shards of 16 responses" in md and "before adee9c9" in md and "not implemented" not in md


@given(st.integers(1, 500), st.floats(0.01, 100), st.floats(0, 600), st.integers(1, 64))
def test_more_workers_never_take_longer_and_never_beat_perfect_division(shards, per, load, k) -> None:
    wall = stage_wall_s(shards, per, load, k)
    assert wall <= stage_wall_s(shards, per, load, max(k - 1, 1)) + 1e-9
    assert wall >= load + shards * per / k - 1e-9
