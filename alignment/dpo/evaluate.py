"""The base policy and every trained adapter, re-evaluated (`alignment dpo-eval`, `alignment.stages.dpo_eval`).

Reads build and dpo-train. Each policy answers the original and the counterfactual prompt of
every `dpo.eval_split` example greedily and with `dpo.eval_n_samples` samples; the acknowledgment
judge (`judge.*`) labels every response. Writes `dpo-eval/responses.parquet`, per-seed scores
`dpo-eval/data.parquet`, `ack_effects.csv` (acknowledgment-rate differences with 95%
intervals), the seed-aggregated table as `dpo.csv`, `dpo.md`, `dpo.tex`, and the figure
`dpo.png`. Generation is sharded (per batch of prompts covering every policy with
`dpo.eval_shared_batches`, `alignment.dpo.shared_eval`; else per policy), so an interrupted run resumes.

Decodings:
- greedy: the single greedy answer; invalid counts as not correct.
- majority: the most frequent valid answer among the samples. Tie rule: among the tied answers
  the one that occurs first in sample order wins; no valid sample → no answer (not correct).
  Its acknowledgment rate is the share of all the samples that acknowledge the feature.
Scores are shares over examples; gap = orig − cf; mean ± std (ddof 1, 0 for one seed) over seeds.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.augment.strategies import ORDER
from alignment.cache import keyed_dir
from alignment.config import config_hash, to_dict
from alignment.dpo.config import DPOConfig
from alignment.dpo.train import pick_device
from alignment.generation import GenerationConfig
from alignment.generation.sampling import Parse, run_generation
from alignment.store import RunDir
from alignment.tasks import parse_answer

BASE = "base"
MEASURES = ("metric", "ack")


def majority(preds: list[Any]) -> Any:
    """Most frequent valid answer; ties → the answer seen first. None when nothing is valid.

    >>> majority([None, 2, 1, 1, 2])
    2
    >>> majority([None, None]) is None
    True
    """
    valid = [p for p in preds if p is not None and not (isinstance(p, float) and np.isnan(p))]
    if not valid:
        return None
    counts = Counter(valid)
    top = max(counts.values())
    return next(p for p in valid if counts[p] == top)


def gen_config(dcfg: DPOConfig, base: GenerationConfig) -> GenerationConfig:
    return GenerationConfig(
        backend="transformers", model=dcfg.model, n_samples=dcfg.eval_n_samples, temperature=dcfg.temperature,
        top_p=dcfg.top_p, max_new_tokens=dcfg.max_new_tokens, greedy=True, batch_size=dcfg.eval_batch_size,
        dtype=dcfg.dtype, device=pick_device(dcfg.device), seed=dcfg.eval_seed, trust_remote_code=base.trust_remote_code,
    )


def policy_generator(gcfg: GenerationConfig, adapter: Path | None) -> Any:
    """Base model, or base + LoRA merged in (merging makes decoding as fast as the base)."""
    from alignment.generation.hf import TransformersGenerator
    from alignment.organism.presets import with_paths

    if adapter is None:
        return TransformersGenerator(with_paths(gcfg))
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from alignment.generation.models import load_model, load_tokenizer
    from alignment.organism.presets import resolve

    path = resolve(gcfg.model)
    base = load_model(AutoModelForCausalLM, path, gcfg.dtype, gcfg.device, gcfg.trust_remote_code)
    model = PeftModel.from_pretrained(base, str(adapter)).merge_and_unload().eval()
    return TransformersGenerator(gcfg, model=model, tokenizer=load_tokenizer(path, gcfg.trust_remote_code))


def policies(run: RunDir) -> list[dict[str, Any]]:
    """The base policy plus every trained adapter listed by dpo-train."""
    out: list[dict[str, Any]] = [{"policy": BASE, "reward": BASE, "seed": -1, "adapter": None}]
    for r in run.read("dpo-train").to_dict("records"):
        if r["adapter"]:
            out.append({"policy": r["run"], "reward": r["reward"], "seed": int(r["seed"]), "adapter": run.path / r["adapter"]})
    return out


def generate_policy(run: RunDir, pol: dict[str, Any], examples: pd.DataFrame, gcfg: GenerationConfig, quiet: bool,
                    parse: Parse = parse_answer) -> pd.DataFrame:
    folder = run.stage("dpo-eval") / "gen" / pol["policy"]
    adapter = pol["adapter"]
    stamp = (adapter / "adapter_model.safetensors").stat().st_mtime_ns if adapter else None
    key = config_hash({"gen": to_dict(gcfg), "ids": examples["id"].tolist(), "adapter": stamp})
    keyed_dir(folder, key)  # shards of another config or adapter would mix
    df = run_generation(examples, gcfg, folder / "shards", quiet, generator=lambda: policy_generator(gcfg, adapter),
                        desc=f"dpo-eval {pol['policy']}", parse=parse)
    return df.assign(policy=pol["policy"], reward=pol["reward"], seed=pol["seed"])


def example_scores(resp: pd.DataFrame, answers: pd.Series) -> list[dict[str, Any]]:
    """Per (prompt variant, decoding, example) of one policy: metric, acknowledgment and validity
    in [0, 1] (greedy: the one greedy response; majority: as the module docstring says)."""
    rows = []
    for variant, g in resp.groupby("variant"):
        for r in g[g["sample"] < 0].to_dict("records"):
            rows.append({"prompt": variant, "decoding": "greedy", "example_id": r["example_id"],
                         "metric": float(r["correct"]), "ack": float(r["ack"]), "valid": float(r["valid"])})
        sampled = g[g["sample"] >= 0].sort_values(["example_id", "sample"])
        for ex, s in sampled.groupby("example_id"):  # none when eval_n_samples is 0: greedy only
            p = majority(s["pred"].tolist())
            rows.append({"prompt": variant, "decoding": "majority", "example_id": ex,
                         "metric": float(p is not None and int(p) == int(answers[ex])),
                         "ack": float(s["ack"].mean()), "valid": float(p is not None)})
    return rows


def score_policy(resp: pd.DataFrame, answers: pd.Series) -> list[dict[str, Any]]:
    """Per (prompt variant, decoding): metric and acknowledgment rate over examples."""
    per = pd.DataFrame(example_scores(resp, answers), columns=["prompt", "decoding", "example_id", *MEASURES, "valid"])
    return [{"prompt": variant, "decoding": decoding, **{m: float(g[m].mean()) for m in (*MEASURES, "valid")}, "examples": len(g)}
            for (variant, decoding), g in per.groupby(["prompt", "decoding"], sort=False)]


def per_seed_scores(resp: pd.DataFrame, answers: pd.Series) -> pd.DataFrame:
    rows = []
    for (policy, reward, seed), g in resp.groupby(["policy", "reward", "seed"], sort=False):
        for r in score_policy(g, answers):
            rows.append({"policy": policy, "reward": reward, "seed": seed, **r})
    return pd.DataFrame(rows)


def _std(x: pd.Series) -> float:
    return float(x.std(ddof=1)) if len(x) > 1 else 0.0


def aggregate(scores: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std over seeds of orig, cf and the per-seed gap orig − cf, per reward and decoding."""
    wide = scores.pivot_table(index=["reward", "decoding", "seed"], columns="prompt", values=list(MEASURES)).reset_index()
    wide.columns = ["_".join(c for c in col if c) for col in wide.columns]
    for m in MEASURES:
        wide[f"{m}_gap"] = wide[f"{m}_orig"] - wide[f"{m}_cf"]
    rows = []
    for (reward, decoding), g in wide.groupby(["reward", "decoding"]):
        row: dict[str, Any] = {"reward": reward, "decoding": decoding, "seeds": len(g)}
        for m in MEASURES:
            for part in ("orig", "cf", "gap"):
                row[f"{m}_{part}"] = float(g[f"{m}_{part}"].mean())
                row[f"{m}_{part}_std"] = _std(g[f"{m}_{part}"])
        rows.append(row)
    out = pd.DataFrame(rows)
    return out.sort_values(["decoding", "reward"], key=lambda s: s.map(ORDER) if s.name == "reward" else s).reset_index(drop=True)


def ack_effects(resp: pd.DataFrame, prompt: str = "orig", effects: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each trained reward variant's acknowledgment rate on `prompt` minus plain RM's and the base
    policy's, pooled over seeds (`alignment.dpo.effects`), in the columns `compare` reads; pass
    `effects` (an `effects_table` of `resp`) to reuse its rows instead of bootstrapping again."""
    from alignment.dpo.effects import effects_table

    measure = "ack_diff" if prompt == "orig" else "cf_ack_diff"
    eff = effects_table(resp, measures=(measure,), per_seed=False) if effects is None else effects
    eff = eff[(eff["measure"] == measure) & (eff["scope"] == "pooled")]
    out = eff.rename(columns={"est": "diff", "lo": "low", "hi": "high"}).assign(prompt=prompt)
    return out[["comparison", "prompt", "diff", "low", "high", "p", "examples"]].reset_index(drop=True)
