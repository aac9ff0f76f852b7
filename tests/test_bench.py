"""`alignment bench`'s decode section on the tiny random Llama (fast) and on SmolLM2 (slow)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from alignment import bench
from alignment.generation.base import chat_for

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


@pytest.mark.slow
def test_cli_json_has_decode_step_ratio(capsys) -> None:
    from alignment.cli import main

    assert main(["bench", "--skip-scoring", "--skip-generation", "--json", "--new-tokens", "2", "--steps", "1",
                 "--skip-batched-step", "--skip-judge"]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["decode_step_ratio"] > 0 and line["n"] == 16 and line["cpu"]


def test_judge_line_needs_no_model(capsys) -> None:
    from alignment.cli import main

    assert main(["bench", "--skip-scoring", "--skip-generation", "--skip-decode", "--skip-contention", "--json",
                 "--judge-mb", "0.02"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert sum(line.startswith("judge    : ") for line in out) == 2
    line = json.loads(out[-1])
    assert line["judge_biasqa_sentences"] > 100 and line["judge_mathbook_cpu_s"] >= 0
