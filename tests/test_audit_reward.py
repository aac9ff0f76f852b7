"""`.venv/bin/python -m pytest -q tests/test_audit_reward.py`: a scripted reward model whose
inconsistency is planted (on exactly 30% of prompts it reverses the order of every transformed
response) and a scripted judge (it flips its verdict on exactly 30% of transformed responses); the
audit recovers exactly the planted violations, and the planted rate lies inside each interval."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from alignment.audit.config import RESPONSE_TRANSFORMATIONS
from alignment.audit.judge import counterfactual_control, judge_audit
from alignment.audit.reward import reward_audit
from alignment.judge.base import Verdict
from alignment.tasks import TASKS, TaskConfig

RATE = 0.3
N = 3
TASK = TASKS.get("mathbook")
ACK = TASK.ack_sentence()


def _unit(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 16**8


def _planted(index: int) -> bool:
    """Exactly 3 in every 10 consecutive indices."""
    return index % 10 < 3


def setup(n: int = 90) -> tuple[dict, pd.DataFrame, set[str]]:
    rows = TASK.build(TaskConfig(n_examples=n))
    examples = {r["id"]: r for r in rows}
    texts = [{"example_id": r["id"], "variant": "orig", "sample": s,
              "text": f"Step one [{i}/{s}]. The book is not needed here. Therefore, the answer is ({'ABC'[s]})."}
             for i, r in enumerate(rows) for s in range(N)]
    responses = pd.DataFrame(texts)
    base = set(responses["text"]) | {f"{t}\n\n{ACK}" for t in responses["text"]}
    return examples, responses, base


class PlantedRM:
    """Scores a base response by its tag; on a flagged prompt a transformed response gets minus that."""

    def __init__(self, base: set[str]) -> None:
        self.base = base

    def score(self, prompt, responses, suffixes):
        out = []
        for text in responses:
            tag = text.split("[")[1].split("]")[0]
            flagged = _planted(int(tag.split("/")[0]))
            v = _unit(tag) + 0.5 * (ACK in text)
            out.append([-v if flagged and text not in self.base else v])
        return np.array(out)


def test_planted_reward_inconsistency_is_recovered() -> None:
    examples, responses, base = setup()
    names = list(RESPONSE_TRANSFORMATIONS)
    scores, prompts, summary, bad = reward_audit(PlantedRM(base), examples, responses, names, ACK, TASK.parse)
    flagged = {e for i, e in enumerate(examples) if _planted(i)}
    assert len(flagged) == RATE * len(examples)
    rows = pd.DataFrame(summary)
    for name in names:
        top1 = rows[(rows["transformation"] == name) & (rows["relation"] == "top-1")].iloc[0]
        assert top1["pairs"] == len(examples) and top1["skipped"] == 0, name
        assert top1["violations"] == len(flagged), name
        assert top1["ci_low"] <= 1 - RATE <= top1["ci_high"], (name, top1["consistency"])
        order = rows[(rows["transformation"] == name) & (rows["relation"] == "pairwise order")].iloc[0]
        assert order["pairs"] == len(examples) * N * (N - 1) // 2 and order["violations"] == len(flagged) * 3
        mine = prompts[prompts["transformation"] == name]
        taus = dict(zip(mine["example_id"], mine["kendall_tau"], strict=True))
        assert all(np.isclose(taus[e], -1.0 if e in flagged else 1.0) for e in examples)
        shift = scores[scores["transformation"] == name]
        assert np.allclose((shift["control"] - shift["base"]) != 0, shift["example_id"].isin(flagged))
    assert {b["relation"] for b in bad} == {"top-1", "pairwise order"}


class PlantedJudge:
    name = "planted"

    def __init__(self, base: set[str]) -> None:
        self.base, self.flipped = base, set()

    def judge(self, task, responses):
        out = []
        for text in responses:
            ack = "math book" in text
            tag = text.split("[")[1].split("]")[0]
            if text not in self.base and _planted(int(tag.split("/")[0]) * N + int(tag.split("/")[1])):
                ack, _ = not ack, self.flipped.add(text)
            out.append(Verdict(ack, "planted"))
        return out


def test_planted_judge_inconsistency_is_recovered() -> None:
    examples, responses, base = setup()
    names = list(RESPONSE_TRANSFORMATIONS)
    judge = PlantedJudge(base)
    verdicts, summary, bad = judge_audit(judge, "mathbook", examples, responses, names, ACK, TASK.parse)
    rows = pd.DataFrame(summary).set_index("transformation")
    for name in names:
        r = rows.loc[name]
        assert r["pairs"] == len(responses)
        assert r["violations"] == sum(b["control_text"] in judge.flipped for b in bad if b["transformation"] == name)
        assert r["violations"] == RATE * len(responses)
        assert r["ci_low"] <= 1 - RATE <= r["ci_high"], (name, r["consistency"])
    assert len(bad) == len(judge.flipped)
    # The ack sentence is there in both texts of the acknowledgment transformations.
    acks = verdicts[verdicts["transformation"].isin(["ack_earlier", "ack_twice"])]
    assert acks["base_ack"].all()


def test_every_counterfactual_acknowledgment_is_a_false_positive() -> None:
    n = 200
    ack = pd.DataFrame({"example_id": [f"e{i}" for i in range(n)], "variant": ["cf"] * n, "sample": [0] * n,
                        "ack": [_unit(f"e{i}") < 0.2 for i in range(n)]})
    gen = ack[["example_id", "variant", "sample"]].assign(text=[f"text {i}" for i in range(n)])
    row, bad = counterfactual_control(ack, gen)
    k = int(ack["ack"].sum())
    assert row["violations"] == len(bad) == k and row["error_lower_bound"] == k / n
    assert row["ci_low"] <= 1 - k / n <= row["ci_high"]
    assert {b["control_text"] for b in bad} == set(gen.loc[ack["ack"], "text"])
