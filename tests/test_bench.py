"""`alignment bench`'s decode section on the tiny random Llama (fast) and on SmolLM2 (slow)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from alignment.generation.base import chat_for
from alignment.measure import bench

ARGS = dict(n=4, new_tokens=3, steps=1, short_tokens=10, skip_batched_step=False)
CHAT = chat_for("You are a careful math tutor.", "Problem 1: x = 12 + 3. Options: (A) 12 (B) 15 (C) 18. " * 6)


@pytest.mark.parametrize("auto", ["float32", "bfloat16"])
def test_decode_section(tiny_llama_dir: Path, monkeypatch, auto: str) -> None:
    monkeypatch.setattr(bench, "auto_dtype", lambda device: (auto, "pretend"))
    r = bench.decode_section(argparse.Namespace(**ARGS), CHAT, str(tiny_llama_dir))
    assert r["auto_dtype"] == auto and r["auto_measured_separately"] == (auto != "float32")
    for d in ("fp32", "auto"):
        for key in ("decode_step_ms_long", "decode_step_ms_short", "prefill_tokens_per_s", "sampling_tokens_per_s"):
            assert r[f"{d}_{key}"] > 0
        assert r[f"{d}_decode_step_ratio"] == r[f"{d}_decode_step_ms_long"] / r[f"{d}_decode_step_ms_short"]
        assert r[f"{d}_decode_step_ratio_batched"] > 0
    assert r["fp32_dtype"] == "float32" and r["auto_dtype"] == auto
    assert r["decode_step_ratio"] == r["auto_decode_step_ratio"]
    bench.print_decode(r)


def test_greedy_section_times_both_ways_with_the_same_texts(tiny_llama_dir: Path, capsys) -> None:
    from alignment.measure.greedy import bench_greedy, print_greedy

    args = argparse.Namespace(greedy_prompts=3, greedy_samples=2, greedy_prompt_tokens=60, greedy_new_tokens=4)
    r = bench_greedy(args, str(tiny_llama_dir))
    assert r["greedy_identical"] is True and r["greedy_prompts"] == 3
    assert r["greedy_speedup"] == r["greedy_apart_s"] / r["greedy_together_s"] > 0
    print_greedy(r)
    assert capsys.readouterr().out.startswith("greedy   : 3 prompts x (2 samples + greedy)")


@pytest.mark.slow
def test_cli_json_has_decode_step_ratio(capsys) -> None:
    from alignment.cli import main

    assert main(["bench", "--skip-scoring", "--skip-generation", "--json", "--new-tokens", "2", "--steps", "1",
                 "--skip-batched-step", "--skip-judge", "--skip-dpo", "--skip-greedy", "--skip-dpo-eval"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["decode_step_ratio"] > 0 and line["n"] == 16 and line["cpu"]


def test_judge_line_needs_no_model(capsys) -> None:
    from alignment.cli import main

    assert main(["bench", "--skip-scoring", "--skip-generation", "--skip-decode", "--skip-contention", "--skip-dpo",
                 "--skip-greedy", "--skip-dpo-eval", "--json", "--judge-mb", "0.02"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert sum(line.startswith("judge    : ") for line in out) == 2
    line = json.loads(out[-1])
    assert line["judge_biasqa_sentences"] > 100 and line["judge_mathbook_cpu_s"] >= 0


# --- `alignment bench --device DEV --shape NAME` (alignment/measure/device.py) ---


@pytest.mark.parametrize("shape, total, counted", [
    # Published parameter counts; "counted" leaves out an untied input embedding table.
    ("llama-3.1-8b", 8_030_261_248, 7_504_924_672),
    ("llama-3.2-3b", 3_212_749_824, 3_212_749_824),  # tied: the table is also the output head
    ("qwen3-1.7b", 1_720_574_976, 1_720_574_976),
])
def test_paper_shapes_have_the_published_sizes(shape: str, total: int, counted: int) -> None:
    import torch

    from alignment.measure.shapes import SHAPES, build, params

    model = build(SHAPES.get(shape), "causal", "meta", torch.bfloat16)  # no memory: shapes only
    assert (params(model, embeddings=True), params(model)) == (total, counted)


def test_device_bench_tiny_on_cpu(capsys) -> None:
    from alignment.cli import main

    assert main(["bench", "--device", "cpu", "--shape", "tiny", "--json", "--n", "3", "--prompt-tokens", "120",
                 "--new-tokens", "4", "--response-tokens", "20", "--batch-size", "4"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert [line[:9] for line in out[:-1]] == ["device   ", "sampling ", "scoring  ", "dpo      "]
    r = json.loads(out[-1])
    assert r["shape"] == "tiny" and r["dtype"] == "float32" and r["project_decoder"] == "shared-prefix"
    for key in ("project_tokens_per_s", "project_static_tokens_per_s", "project_shared_prefix_tokens_per_s",
                "generate_dynamic_tokens_per_s", "generate_static_tokens_per_s", "floor_tokens_per_s",
                "scoring_speedup", "dpo_tokens_per_s", "dpo_share_of_peak", "generation_peak_memory_bytes"):
        assert r[key] > 0, key
    assert r["project_tokens_per_s"] == r["project_shared_prefix_tokens_per_s"]
    assert r["project_static_compile_s"] == 0  # never compiled on a CPU
    # fp32 on a CPU: naive scoring is the reference itself; the shared prefix is exact up to rounding.
    assert r["scoring_naive_max_abs_diff_vs_fp32"] == 0 and r["scoring_shared_max_abs_diff_vs_fp32"] < 1e-4
    assert r["scoring_shared_positions"] < r["scoring_naive_positions"]
    assert 120 <= r["generation_prompt_tokens"] < 200


@pytest.mark.parametrize("argv, message", [
    (["--shape", "llama-8b"], "unknown bench shape 'llama-8b' (did you mean 'llama-3.1-8b'?)"),
    (["--device", "tpu"], "--device: must be auto, cpu"),
    (["--device", "auto"], "--device must be cpu, cuda or cuda:N"),
])
def test_device_bench_bad_flags_exit_2(argv: list[str], message: str, capsys) -> None:
    from alignment.cli import main

    assert main(["bench", *argv]) == 2
    assert message in capsys.readouterr().err


DPO_EVAL = dict(dpo_eval_adapters=2, dpo_eval_prompts=3, dpo_eval_samples=1, dpo_eval_prompt_tokens=60, dpo_eval_new_tokens=4,
                dpo_eval_batch_size=4, dpo_eval_device="cpu", dpo_eval_dtype="float32")


def test_dpo_eval_line_decodes_the_same_texts_both_ways(tiny_llama_dir: Path, capsys) -> None:
    from alignment.measure.dpo_eval_speed import bench_dpo_eval, print_dpo_eval

    r = bench_dpo_eval(argparse.Namespace(**DPO_EVAL), str(tiny_llama_dir))
    assert r["dpo_eval_identical"] is True and r["dpo_eval_policies"] == 3 and r["dpo_eval_rows"] == 3 * 3 * 2
    assert r["dpo_eval_speedup"] == r["dpo_eval_alone_s"] / r["dpo_eval_shared_s"] > 0
    assert r["dpo_eval_decoder"] == "shared-prefix" and r["dpo_eval_merged_differ"] >= 0
    print_dpo_eval(r)
    assert capsys.readouterr().out.startswith("dpo-eval : 3 policies (base + 2 LoRA adapters), 18 rows")


def test_dpo_eval_line_refuses_a_bad_device(tiny_llama_dir: Path) -> None:
    from alignment.errors import UserError
    from alignment.measure.dpo_eval_speed import bench_dpo_eval

    with pytest.raises(UserError, match="--dpo-eval-device"):
        bench_dpo_eval(argparse.Namespace(**{**DPO_EVAL, "dpo_eval_device": "tpu"}), str(tiny_llama_dir))
