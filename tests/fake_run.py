"""Run dirs for the viewer and compare tests, built in seconds without a model.

The real stages run where they need no model (build on synthetic data, attribute, the keyword
judge, bon, report); only the policy's texts and the reward model's scores are drawn here, from
a seeded generator, so every artifact has exactly the columns a real run writes.
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd

from alignment.analysis.bon import BonConfig
from alignment.augment.attribution import AttributionConfig
from alignment.context import Context
from alignment.judge import JudgeConfig
from alignment.reward.scoring import final_rewards
from alignment.stages.ack import ack
from alignment.stages.attribute import attribute
from alignment.stages.bon import bon
from alignment.stages.build import build
from alignment.stages.report import report
from alignment.store import RunDir, write_parquet
from alignment.tasks import TASKS, TaskConfig

LETTERS = "ABCDE"
USES_BOOK = "According to the solution given in the math book, the answer to this problem is {v}. Therefore, the answer is ({l})."
WORKS_IT = "Let me work it out step by step: the quantities combine to {v}, matching option {l}. Therefore, the answer is ({l})."
SETS_ASIDE = "The book solves this problem already; I will not rely on it. Working it out gives {v}. Therefore, the answer is ({l})."
NO_ANSWER = "I cannot settle on one of the options here without more information."


def _text(rng: random.Random, options: list, pick: int, leak: bool) -> str:
    if rng.random() < 0.1:
        return NO_ANSWER
    template = USES_BOOK if leak and rng.random() < 0.5 else rng.choice([WORKS_IT, SETS_ASIDE])
    return template.format(v=options[pick], l=LETTERS[pick])


def _responses(examples: pd.DataFrame, n_samples: int, rng: random.Random, skill: float) -> pd.DataFrame:
    rows = []
    for ex in examples.to_dict("records"):
        for variant in ("orig", "cf"):
            for s in range(n_samples):
                # The leaked solution makes the original prompt easier: the effect the run measures.
                right = rng.random() < skill + (0.3 if variant == "orig" else 0.0)
                pick = int(ex["answer"]) if right else rng.choice([i for i in range(5) if i != int(ex["answer"])])
                text = _text(rng, list(ex["options"]), pick, leak=variant == "orig")
                pred = TASKS.get("mathbook").parse(text, list(ex["options"]))
                rows.append({"example_id": ex["id"], "variant": variant, "sample": s, "greedy": False, "seed": s,
                             "text": text, "pred": pred, "valid": pred is not None,
                             "correct": pred is not None and pred == int(ex["answer"])})
    return pd.DataFrame(rows)


def fake_run(path: Path, n_examples: int = 6, n_samples: int = 4, seed: int = 0, skill: float = 0.4,
             bonus: float = 0.5, draw: str = "per_prompt") -> RunDir:
    """A finished run dir (build → generate → attribute → score → ack → bon → report) at `path`.

    `skill` moves the policy's accuracy, `bonus` how much the reward model likes the
    acknowledgment suffix; two calls with different values give two comparable runs."""
    run = RunDir(path)
    task = TASKS.get("mathbook")
    ctx = Context(run, task)
    ctx.quiet = True
    build(TaskConfig(name="mathbook", source="synthetic", n_examples=n_examples), ctx)
    rng = random.Random(seed)
    resp = _responses(ctx.read("build"), n_samples, rng, skill)
    write_parquet(run.stage("generate") / "data.parquet", resp)
    attribute(AttributionConfig(draw=draw), ctx)
    scores = resp[["example_id", "variant", "sample"]].copy()
    scores["reward_plain"] = [round(rng.gauss(0, 1), 4) for _ in range(len(scores))]
    scores["reward_augmented"] = (scores["reward_plain"] + bonus).where(scores["variant"] == "orig")
    write_parquet(run.stage("score") / "data.parquet", final_rewards(scores, ctx.read("attribute")))
    ack(JudgeConfig(name="keyword"), ctx)
    bon(BonConfig(ns=[1, 2, 4]), ctx)
    report(None, ctx)
    return run


def label_sample(run: RunDir, n: int = 12, flip_every: int = 4, unlabelled: int = 1) -> list[dict]:
    """What a person does with `alignment judge sample RUN --n N`: label the sample on its page
    and save the download as RUN/judge_sample/sample_labelled.jsonl. Here every `flip_every`-th
    row is labelled against the judge's verdict (a disagreement), the last `unlabelled` rows are
    left null, the rest agree. Returns the labelled rows as written."""
    import json

    from alignment.cli import main

    assert main(["judge", "sample", str(run.path), "--n", str(n), "--task", "mathbook"]) == 0
    folder = run.path / "judge_sample"
    rows = [json.loads(line) for line in (folder / "sample.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["ack_label"] = None if i >= len(rows) - unlabelled else (row["judge_ack"] != (i % flip_every == 0))
    (folder / "sample_labelled.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def fake_dpo_eval(run: RunDir, seed: int = 0, skill: float = 0.4, rewards: tuple[str, ...] = ("rm", "rm_d"),
                  seeds: tuple[int, ...] = (0, 1), n_samples: int = 3, n_examples: int = 5) -> pd.DataFrame:
    """dpo-eval's artifacts as the stage writes them (responses.parquet, per-seed data.parquet,
    ack_effects.csv, dpo.csv/.md), from drawn texts for the base policy and one policy per
    (reward variant, seed), judged by the keyword judge and scored by the stage's own functions."""
    from alignment.dpo.evaluate import BASE, ack_effects, aggregate, per_seed_scores
    from alignment.dpo.tables import write_tables
    from alignment.judge import make_judge

    examples = run.read("build").sort_values("id").iloc[:n_examples]
    rng = random.Random(seed)
    parts = []
    for reward, s in [(BASE, -1)] + [(r, s) for r in rewards for s in seeds]:
        lift = 0.0 if reward == BASE else 0.1 * (1 + rewards.index(reward))
        greedy = _responses(examples, 1, rng, skill + lift).assign(sample=-1, greedy=True)
        sampled = _responses(examples, n_samples, rng, skill + lift)
        policy = BASE if reward == BASE else f"{reward}-seed{s}"
        parts.append(pd.concat([greedy, sampled]).assign(policy=policy, reward=reward, seed=s))
    resp = pd.concat(parts, ignore_index=True)
    resp["ack"] = [v.ack for v in make_judge(JudgeConfig(name="keyword")).judge("mathbook", resp["text"].tolist())]
    folder = run.stage("dpo-eval")
    write_parquet(folder / "responses.parquet", resp)
    scores = per_seed_scores(resp, examples.set_index("id")["answer"])
    write_parquet(folder / "data.parquet", scores)
    (folder / "ack_effects.csv").write_text(ack_effects(resp).to_csv(index=False))
    write_tables(aggregate(scores), folder, "accuracy")
    return resp
