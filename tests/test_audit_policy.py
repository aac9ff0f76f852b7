"""`.venv/bin/python -m pytest -q tests/test_audit_policy.py`: a scripted policy whose inconsistency is
planted (it changes its answer on exactly 30% of the transformed original prompts, and on another
30% of the counterfactual ones) run through the audit stage; the audit recovers exactly the planted
flips, and the planted rate lies in its interval."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from alignment.audit.config import AuditConfig
from alignment.augment.attribution import AttributionConfig, attribute_responses
from alignment.context import Context
from alignment.generation.base import GenerationConfig
from alignment.generation.sampling import run_generation
from alignment.stages.audit import audit
from alignment.store import RunDir, write_parquet
from alignment.tasks import TASKS, TaskConfig

RATE = 0.3
GEN = GenerationConfig(n_samples=3, batch_size=12, seed=3)
_OPTION = re.compile(r"\(([A-E])\) (.*?)(?= \([A-E]\) |$)")


def _planted(index: int) -> bool:
    """Exactly 3 in every 10 consecutive indices."""
    return index % 10 < 3


class FlippingPolicy:
    """Copies the leaked solution's answer when the book holds it, else picks the smallest option
    (by content, so option order cannot matter); on an unseen prompt of a planted example it picks
    another option (all N samples alike). Original prompts of examples 0-2, 10-12, ... are
    planted; counterfactual prompts of examples 5-7, 15-17, ..."""

    def __init__(self, rows: list[dict]) -> None:
        self.truth = {r["question"]: (i, r["options"][r["answer"]], r["leak"]) for i, r in enumerate(rows)}
        assert len(self.truth) == len(rows)
        self.seen: set[str] = set()
        self.frozen = False
        self.flipped: list[str] = []

    def generate(self, chats, seeds, greedy=False):
        out = []
        for chat, ss in zip(chats, seeds, strict=True):
            text = chat[-1]["content"]
            question = text.split("=== Your question ===\n")[1]
            shown = [m.group(2) for m in _OPTION.finditer(question.split("Options: ")[1].split("\n")[0])]
            i, correct, leak = self.truth[question.split("\nOptions: ")[0]]
            target = correct if leak in text else min(shown)
            if not self.frozen:
                self.seen.add(text)
            elif text not in self.seen and _planted(i if leak in text else i + 5):
                target = sorted(shown)[(sorted(shown).index(target) + 1) % len(shown)]
                self.flipped.append(text)
            out.append([f"Working it out. Therefore, the answer is ({'ABCDE'[shown.index(target)]})." for _ in ss])
        return out


def planted_run(tmp_path: Path, n: int = 80) -> tuple[RunDir, FlippingPolicy, pd.DataFrame]:
    rows = TASKS.get("mathbook").build(TaskConfig(n_examples=n))
    examples = pd.DataFrame(rows)
    script = [{**r, "question": r["query"].split("=== Your question ===\n")[1].split("\nOptions: ")[0],
               "leak": r["sources"][0]["original"].split(": ", 1)[1][:40]} for r in rows]
    policy = FlippingPolicy(script)
    run = RunDir(tmp_path / "run")
    write_parquet(run.stage("build") / "data.parquet", examples)
    responses = run_generation(examples, GEN, tmp_path / "shards", quiet=True, generator=policy)
    write_parquet(run.stage("generate") / "data.parquet", responses)
    write_parquet(run.stage("attribute") / "data.parquet", attribute_responses(responses, AttributionConfig()))
    policy.frozen = True
    return run, policy, examples


def test_planted_flips_are_recovered_within_the_interval(tmp_path: Path) -> None:
    run, policy, examples = planted_run(tmp_path)
    names = ["book_order", "book_distractor", "option_order"]
    ctx = Context(run, TASKS.get("mathbook"), quiet=True,
                  sections={"generation": GEN, "attribution": AttributionConfig(), "reward": None, "judge": None})
    audit(AuditConfig(enabled=True, transformations=names, evaluators=["policy"], max_examples=0), ctx, generator=policy)
    summary = pd.read_csv(run.stage("audit") / "consistency.csv")
    policy_rows = pd.read_csv(run.stage("audit") / "policy.csv")
    built = dict(zip(examples["id"], examples["query"], strict=True))
    control = pd.read_parquet(run.stage("audit") / "responses.parquet")
    for name in names:
        mine = policy_rows[policy_rows["transformation"] == name]
        assert len(mine) == len(examples)  # every example offers it; no prompt is left unchanged
        assert set(control.loc[control["transformation"] == name, "example_id"]) == set(built)
        assert all(q != built[e] for q, e in zip(_queries(run, name, "orig"), examples["id"], strict=True))
        answer = summary[(summary["transformation"] == name) & (summary["relation"] == "modal answer")].iloc[0]
        flipped_orig = sum(_planted(i) for i in range(len(examples)))
        assert answer["violations"] == flipped_orig == (~mine["answer_consistent"]).sum() == RATE * len(examples)
        assert answer["ci_low"] <= 1 - RATE <= answer["ci_high"], (name, answer["consistency"])
        assert answer["error_lower_bound"] == flipped_orig / (2 * len(mine))
        account = summary[(summary["transformation"] == name) & (summary["relation"] == "one-source account")].iloc[0]
        assert account["violations"] == sum(_planted(i) or _planted(i + 5) for i in range(len(examples)))
        print(name, answer["violations"], answer["pairs"], answer["consistency"], answer["ci_low"], answer["ci_high"])


def _queries(run: RunDir, name: str, variant: str) -> list[str]:
    """The transformed prompts the stage generated for, in example order (rebuilt independently)."""
    from alignment.audit.prompts import transform_prompt

    rows = run.read("build").to_dict("records")
    key = "query" if variant == "orig" else "cf_query"
    return [transform_prompt(name, r, rows, 0).row[key] for r in rows]
