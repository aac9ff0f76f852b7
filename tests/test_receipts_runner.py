"""`.venv/bin/python -m pytest -q tests/test_receipts_runner.py`: the receipts stage with a scripted policy.

The fake policy reads which source values are present in the prompt, so every cube cell is known
in advance; nothing loads a model or touches the network.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from alignment.augment.attribution import AttributionConfig, attribute_example
from alignment.context import Context
from alignment.errors import UserError
from alignment.generation.base import GenerationConfig
from alignment.generation.sampling import run_generation
from alignment.receipts.records import disclaimer
from alignment.receipts.runner import example_cube, hybrid_key, modal_answer, run_cubes
from alignment.stages.receipts import receipts
from alignment.store import RunDir, write_parquet
from alignment.tasks import TASKS
from alignment.tasks.base import finish_row, load_prompt, source

N = 3
CFG = GenerationConfig(n_samples=N, batch_size=4, seed=7)
SEED = 5
# Scripts: answer letter as a function of (book solution replaced, instruction removed).
SCRIPTS = {
    "agree": lambda swap, gone: "A",
    "ground": lambda swap, gone: "B" if swap else "A",
    "either": lambda swap, gone: "B" if swap or gone else "A",
    "both": lambda swap, gone: "B" if swap and gone else "A",
}


def make_row(name: str) -> dict:
    return finish_row(
        {
            "id": f"ex-{name}",
            "unit_id": name,
            "split": "test",
            "task": "mathbook",
            "system": "You are a solver.",
            "template": f"Book: {{{{source:book_solution}}}}\n\n{{{{source:instruction}}}}\n\nScript {name}. Options: (A) 1 (B) 2",
            "sources": [
                source("book_solution", "ground", "SOL-ORIG", "SOL-SWAP", True),
                source("instruction", "norm", "INSTR-KEEP", "", False),
            ],
            "answer": 0,
            "options": ["1", "2"],
            "category": "fake",
        }
    )


class ScriptedPolicy:
    """Answers by script; a `noisy` script answers by the sample seed's parity instead."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, chats, seeds, greedy=False):
        out = []
        for chat, ss in zip(chats, seeds, strict=True):
            text = chat[-1]["content"]
            self.prompts.append(text)
            name = text.split("Script ")[1].split(".")[0]
            if name == "noisy":
                out.append([f"The answer is ({'AB'[s % 2]})." for s in ss])
                continue
            letter = SCRIPTS[name]("SOL-SWAP" in text, "INSTR-KEEP" not in text)
            out.append([f"The answer is ({letter})." for _ in ss])
        return out


def make_run(tmp_path: Path, names: list[str], policy: ScriptedPolicy) -> RunDir:
    run = RunDir(tmp_path / "run")
    rows = [make_row(n) for n in names]
    write_parquet(run.stage("build") / "data.parquet", rows)
    gen = run_generation(pd.DataFrame(rows), CFG, tmp_path / "gen-shards", True, policy)
    write_parquet(run.stage("generate") / "data.parquet", gen)
    return run


def ctx(run: RunDir) -> Context:
    return Context(run, TASKS.get("mathbook"), quiet=True, sections={"generation": CFG})


@pytest.fixture
def done(tmp_path):
    policy = ScriptedPolicy()
    run = make_run(tmp_path, list(SCRIPTS), policy)
    policy.prompts.clear()
    manifest = receipts(AttributionConfig(seed=SEED, receipts=True), ctx(run), generator=policy)
    data = run.read("receipts").set_index("example_id")
    return run, policy, manifest, data


def test_cells_receipts_and_executions(done):
    _, _, manifest, data = done
    agree = data.loc["ex-agree"]
    assert json.loads(agree["cells"]) == {"": 0, "book_solution+instruction": 0}
    assert agree["executions"] == 2 and list(agree["receipt"]) == [] and not agree["changed"]
    ground = data.loc["ex-ground"]
    assert json.loads(ground["cells"]) == {"": 0, "book_solution": 1, "instruction": 0, "book_solution+instruction": 1}
    assert [list(t) for t in ground["receipt"]] == [["book_solution"]]
    assert (ground["old_verdict"], ground["new_verdict"], ground["executions"]) == (0, 1, 4)
    either = data.loc["ex-either"]  # ambiguous: each source alone suffices, both accounts kept
    assert [list(t) for t in either["receipt"]] == [["book_solution"], ["instruction"]]
    both = data.loc["ex-both"]
    assert [list(t) for t in both["receipt"]] == [["book_solution", "instruction"]]
    assert manifest["changed"] == 3 and manifest["executions"] == 2 + 4 * 3


def test_each_hybrid_generated_once_and_reused(done):
    run, policy, manifest, data = done
    # Only hybrids generate/ lacks: the new state everywhere, {instruction} where endpoints differ.
    assert len(policy.prompts) == 4 + 3
    assert max(Counter(policy.prompts).values()) == 1
    assert all("INSTR-KEEP" not in p for p in policy.prompts)  # {} and {book_solution} reused
    assert list(data.loc["ex-agree"]["generated"]) == ["book_solution+instruction"]
    assert manifest["hybrids_generated"] == 7
    assert len(pd.read_parquet(run.stage("receipts") / "hybrids.parquet")) == 7 * N


def test_response_cubes_share_the_pool(done):
    run, _, _, _ = done
    resp = pd.read_parquet(run.stage("receipts") / "responses.parquet")
    assert len(resp) == 4 * N  # one cube per original response, no extra generation
    ground = resp[resp["example_id"] == "ex-ground"]
    assert ground["d"].all() and all([list(t) for t in r] == [["book_solution"]] for r in ground["receipt"])


def test_resume_generates_nothing_then_only_missing_shard(done, tmp_path):
    run, policy, _, data = done
    policy.prompts.clear()
    receipts(AttributionConfig(seed=SEED, receipts=True), ctx(run), generator=policy)
    assert policy.prompts == []
    shard = sorted((run.stage("receipts") / "shards").rglob("part-*.parquet"))[-1]
    shard.unlink()
    receipts(AttributionConfig(seed=SEED, receipts=True), ctx(run), generator=policy)
    assert 0 < len(policy.prompts) <= 4
    again = run.read("receipts").set_index("example_id")
    assert again["cells"].tolist() == data["cells"].tolist()


def test_full_cube_executes_every_cell(tmp_path):
    policy = ScriptedPolicy()
    run = make_run(tmp_path, ["agree"], policy)
    receipts(AttributionConfig(seed=SEED, receipts=True), ctx(run), generator=policy, full=True)
    row = run.read("receipts").iloc[0]
    assert row["executions"] == 4 and len(json.loads(row["cells"])) == 4


def test_response_cube_matches_strategy_d(tmp_path):
    policy = ScriptedPolicy()
    run = make_run(tmp_path, ["noisy"], policy)
    gen = run.read("generate")
    receipts(AttributionConfig(seed=SEED, receipts=True), ctx(run), generator=policy)
    resp = pd.read_parquet(run.stage("receipts") / "responses.parquet").sort_values("sample")
    d = attribute_example(
        gen[gen["variant"] == "orig"], gen[gen["variant"] == "cf"], AttributionConfig(seed=SEED), "ex-noisy"
    )
    assert resp["d"].tolist() == [r["d"] for r in d]


def test_missing_hybrid_is_a_clear_error():
    row = make_row("ground")
    with pytest.raises(UserError, match="not generated"):
        example_cube(row, {("ex-ground", ""): [0]})


def test_run_cubes_without_generate_samples(tmp_path):
    policy = ScriptedPolicy()
    out = run_cubes(pd.DataFrame([make_row("ground")]), pd.DataFrame(), CFG, tmp_path / "s", SEED, policy)
    assert out.example_cubes["ex-ground"].receipt == frozenset({frozenset({"book_solution"})})
    assert len(policy.prompts) == 4 and out.response_cubes == {}


def test_modal_answer_ties_and_keys():
    assert modal_answer([1, 0, 1, 0, -1, -1]) == 0
    assert hybrid_key(set(), ["a"]) == ""


def test_disclaimer_names_exactly_the_receipt_sources():
    both = disclaimer("mathbook", [["book_solution"], ["instruction"]])
    assert both == load_prompt("ack_source_mathbook_book_solution") + "\n" + load_prompt(
        "ack_source_mathbook_instruction"
    )
    assert disclaimer("biasqa", [["occupation"]]) == load_prompt("ack_source_biasqa_occupation")
    assert disclaimer("biasqa", []) == ""
    ordered = disclaimer("biasqa", [["instruction", "occupation"]], order=["occupation", "instruction"])
    assert ordered.splitlines() == [
        load_prompt("ack_source_biasqa_occupation"),
        load_prompt("ack_source_biasqa_instruction"),
    ]
    with pytest.raises(UserError):
        disclaimer("biasqa", [["nonexistent"]])
