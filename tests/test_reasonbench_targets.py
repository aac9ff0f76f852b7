"""`.venv/bin/python -m pytest -q tests/test_reasonbench_targets.py`: targets and strict parsers.

Every gold completion of a small build parses back to its own fields; anything off the format is
unparseable (with a reason), never silently read; permutation augmentation re-renders each train
case in another source order with the same cube and receipt.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from alignment.reasonbench.benchmark.build import BuildConfig, build
from alignment.reasonbench.benchmark.render import render
from alignment.reasonbench.experiments.targets import (
    INSTRUCTIONS,
    TARGETS,
    case_input,
    parse,
    prompt_for,
    serialise,
    targets_table,
)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("rbt")
    build(BuildConfig(out, seed=1, scale=0.02, quiet=True, workers=1))
    return targets_table(pd.read_parquet(out / "reasonbench.parquet"), augment_seed=1)


def test_every_gold_completion_parses_to_its_fields(table: pd.DataFrame) -> None:
    for r in table.to_dict("records"):
        for t in TARGETS:
            p = parse(t, r[f"completion_{t}"])
            assert p.ok and p.old == r["old_verdict"] and p.new == r["new_verdict"], (t, r["id"])
            if t != "direct_verdict":
                assert p.receipt == list(r["receipt"])
        assert parse("cube", r["completion_cube"]).cells == json.loads(r["cube"])
        assert parse("rationale_receipt", r["completion_rationale_receipt"]).changed == list(r["changed"])


def test_inputs_are_identical_across_targets_and_lose_the_template_question(table: pd.DataFrame) -> None:
    r = table.iloc[0]
    prompts = {t: prompt_for(t, r["input"]) for t in TARGETS}
    assert all(p.startswith(r["input"] + "\n\n") for p in prompts.values())
    assert {p[len(r["input"]) + 2 :] for p in prompts.values()} == set(INSTRUCTIONS.values())
    with pytest.raises(ValueError, match="question"):
        case_input("no question here", "t1")


GOOD = {
    "direct_verdict": "old: deny\nnew: approve",
    "direct_receipt": "old: deny\nnew: approve\nreceipt: G; NA",
    "rationale_receipt": ("rationale: before the revision the evaluator decides deny; the revision "
                          "amends G and N; after it the evaluator decides approve.\nnew: approve\nreceipt: G"),
}  # fmt: skip


@pytest.mark.parametrize(
    ("target", "text", "reason"),
    [
        ("direct_verdict", "old: deny\nnew: Approve", "new"),
        ("direct_verdict", "old: deny\nnew: approve\nreceipt: G", "lines"),
        ("direct_verdict", "", "lines"),
        ("direct_receipt", "old: deny\nnew: approve\nreceipt: G; G", "receipt"),
        ("direct_receipt", "old: deny\nnew: approve\nreceipt: NG", "receipt"),
        ("direct_receipt", "old: deny\nnew: approve\nreceipt: G,N", "receipt"),
        ("direct_receipt", "old: deny\nnew: approve\nreceipt: ", "receipt"),
        ("direct_receipt", "The verdict is approve.", "lines"),
        ("rationale_receipt", "rationale: it changed.\nnew: approve\nreceipt: G", "rationale"),
        ("rationale_receipt", GOOD["rationale_receipt"].replace("G and N", "G and G"), "twice"),
        ("cube", "none: deny\n" * 8, "G"),
    ],
)
def test_strict_parser_rejects_anything_off_format(target: str, text: str, reason: str) -> None:
    p = parse(target, text)
    assert not p.ok and reason in p.error and p.old is None and p.receipt is None


def test_surrounding_whitespace_is_the_only_slack() -> None:
    for t, text in GOOD.items():
        assert parse(t, f"  {text}\n\n").ok and parse(t, text.replace("\n", "\n ")).ok
        assert not parse(t, text + "\nthanks").ok
    assert parse("direct_receipt", GOOD["direct_receipt"]).receipt == ["G", "NA"]


def test_cube_receipt_comes_from_the_predicted_cells() -> None:
    cells = dict(zip(["", "G", "N", "A", "GN", "GA", "NA", "GNA"],
                     ["deny", "approve", "deny", "deny", "approve", "approve", "deny", "approve"], strict=True))  # fmt: skip
    p = parse("cube", serialise("cube", {"cells": cells}))
    assert p.ok and p.receipt == ["G"] and (p.old, p.new) == ("deny", "approve")
    cells["NA"] = "approve"  # now NA also reproduces the revised verdict
    assert parse("cube", serialise("cube", {"cells": cells})).receipt == ["G", "NA"]


def test_permutation_augmentation_keeps_cube_and_receipt(table: pd.DataFrame) -> None:
    aug = table[table["augment"]]
    train = table[(table["split"] == "train") & table["control_type"].isna()].set_index("id")
    assert len(aug) == len(train) and aug["control_type"].eq("permutation").all()
    for r in aug.to_dict("records"):
        base = train.loc[r["control_of"]]
        assert r["source_order"] != base["source_order"] and r["cube"] == base["cube"]
        assert list(r["receipt"]) == list(base["receipt"]) and r["input"] != base["input"]
        # the augmented input is the benchmark's own rendering of the same states in the new order
        states = [json.loads(r[c]) for c in ("context", "old_state", "new_state")]
        assert r["input"] == case_input(render(r["stratum"], *states, r["template"], r["source_order"]), r["template"])
    assert aug["cardinality_split"].isna().all()  # the cardinality regime never trains on them
