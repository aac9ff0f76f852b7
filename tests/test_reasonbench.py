"""`.venv/bin/python -m pytest -q tests/test_reasonbench.py`: ReasonBench generator and audit.

Small builds (a few percent of the published size) check quotas, labels, controls, splits,
determinism and the audit; one slow test builds the full default and checks the published counts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from alignment.errors import UserError
from alignment.reasonbench.benchmark import logic, org
from alignment.reasonbench.benchmark.audit import audit
from alignment.reasonbench.benchmark.build import BuildConfig, build, counts
from alignment.reasonbench.benchmark.cases import CUBE_KEYS, SOURCES, key_of, receipt_keys
from alignment.reasonbench.benchmark.quotas import PUBLISHED, expected_counts, unit_quotas
from alignment.receipts import receipt_family

SCALE = 0.02


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    out = tmp_path_factory.mktemp("rb")
    build(BuildConfig(out, seed=7, scale=SCALE, quiet=True, workers=1))
    return out, pd.read_parquet(out)


def _main(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["control_type"].isna()]


def test_counts_meet_the_scaled_quotas(built: tuple[Path, pd.DataFrame]) -> None:
    _, df = built
    assert counts(df) == expected_counts(SCALE)
    want: Counter[tuple[str, str, str]] = Counter()
    for cell, quotas in unit_quotas(SCALE):
        for q in quotas:
            for label, n in q.items():
                want[(cell.split, cell.stratum, label)] += n
    main = _main(df)
    labels = main["receipt_category"] + ":" + main["new_verdict"]
    got = Counter(zip(main["split"], main["stratum"], labels, strict=True))
    assert got == +want
    assert set(main["min_receipt_size"]) == {0, 1, 2, 3}


def test_receipts_are_the_brute_force_family_of_the_stored_cube(
    built: tuple[Path, pd.DataFrame],
) -> None:
    _, df = built
    for r in df.to_dict("records"):
        cube = json.loads(r["cube"])
        assert list(cube) == list(CUBE_KEYS)
        family = receipt_family(SOURCES, lambda t, c=cube: c[key_of(t)])
        assert list(r["receipt"]) == receipt_keys(family)
        assert (r["old_verdict"], r["new_verdict"]) == (cube[""], cube["GNA"])
        assert bool(r["ambiguous"]) == (len(r["receipt"]) > 1)


def test_controls_keep_or_mirror_the_receipt(built: tuple[Path, pd.DataFrame]) -> None:
    _, df = built
    main = _main(df).set_index("id")
    controls = df[df["control_type"].notna()]
    assert Counter(controls["control_type"]) == {
        t: int((main["split"] == "locked").sum()) for t in ("inverse", "permutation", "distractor")
    }
    for c in controls.to_dict("records"):
        orig = main.loc[c["control_of"]]
        a, b = json.loads(c["cube"]), json.loads(orig["cube"])
        if c["control_type"] == "inverse":
            assert all(a[k] == b[key_of(set(SOURCES) - set(k))] for k in CUBE_KEYS)
        else:
            assert a == b and list(c["receipt"]) == list(orig["receipt"])
            assert c["prompt"] != orig["prompt"]
        if c["control_type"] == "permutation":
            assert c["source_order"] != orig["source_order"] == "GNA"


def test_splits_are_unit_disjoint_and_prompts_unique(built: tuple[Path, pd.DataFrame]) -> None:
    _, df = built
    assert df.groupby("unit_id")["split"].nunique().max() == 1
    assert df.groupby("prompt")["split"].nunique().max() == 1
    main = _main(df)
    assert set(main.loc[main["split"] == "shift_linguistic", "template"]) <= {"t5", "t6"}
    assert not set(main.loc[main["split"] != "shift_linguistic", "template"]) & {"t5", "t6"}
    assert main.loc[main["split"] == "shift_depth", "depth"].min() >= 4
    assert main.loc[main["split"] != "shift_depth", "depth"].max() <= 3
    assert main.loc[main["split"] == "shift_operator", "operator"].str.contains("atleast").all()
    assert not main.loc[main["split"] != "shift_operator", "operator"].str.contains("atleast").any()


def test_audit_is_clean_and_catches_a_wrong_label(
    built: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    out, df = built
    report = audit(out)
    assert report.clean, report.summary()
    assert (report.label_errors, report.control_errors, report.leaked_units) == ([], [], [])
    assert report.prompt_overlap == 0
    bad = df.copy()
    bad.loc[0, "receipt"] = ["G"] if list(df.loc[0, "receipt"]) != ["G"] else ["N"]
    bad.to_parquet(tmp_path / "reasonbench.parquet", index=False)
    report = audit(tmp_path)
    assert not report.clean and any(e.startswith(f"{df.loc[0, 'id']}: ") for e in report.label_errors)


def test_same_seed_same_rows_any_worker_count(built: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    _, df = built
    build(BuildConfig(tmp_path / "again", seed=7, scale=SCALE, quiet=True, workers=2))
    pd.testing.assert_frame_equal(df, pd.read_parquet(tmp_path / "again"))
    build(BuildConfig(tmp_path / "other", seed=8, scale=SCALE, quiet=True, workers=1))
    other = pd.read_parquet(tmp_path / "other")
    assert counts(other) == counts(df) and list(other["prompt"]) != list(df["prompt"])


def test_referral_only_from_authority_and_a_missing_norm_denies() -> None:
    ctx = {"query": "q", "query_rules": ["R1", "R2"], "depth": 1}
    rule = ["R1", "all", 0, ["a"], "q"]
    assert logic.adjudicate(ctx, {"G": ["a"], "N": [rule], "A": []}) == "refer"
    assert logic.adjudicate(ctx, {"G": ["a"], "N": [rule], "A": ["R1"]}) == "approve"
    assert logic.adjudicate(ctx, {"G": [], "N": [rule], "A": ["R1"]}) == "deny"
    # a mandate over the question but no authorised rule in force: a missing norm, decided
    assert logic.adjudicate(ctx, {"G": ["a"], "N": [], "A": ["R1"]}) == "deny"
    assert logic.adjudicate(ctx, {"G": ["a"], "N": [rule], "A": ["R2"]}) == "deny"
    clause = org.BY_ID["EXP-01"]
    g = {"request_type": "meal_expense",
         "fields": {"cost_per_attendee": 30, "itemised_receipt": True, "alcohol_on_bill": False}}
    state = {"G": g, "N": clause.norm, "A": {"finance": [], "audit": ["meal_expense"],
                                             "operations": []}}  # fmt: skip
    assert org.adjudicate({"clause": "EXP-01"}, state) == "refer"
    state["A"]["finance"] = ["meal_expense"]
    assert org.adjudicate({"clause": "EXP-01"}, state) == "approve"
    g["fields"]["alcohol_on_bill"] = True  # the exception comes first
    assert org.adjudicate({"clause": "EXP-01"}, state) == "deny"


def test_refer_exactly_when_the_question_has_no_mandate() -> None:
    rng = random.Random(0)
    world = logic.make_world("log-000", "main", 0, 0)
    for aim in ("stable:deny", "r1:refer", "r2:approve") * 100:
        ctx, old, _ = world.propose(rng, "GA", aim)
        mandate = bool(set(old["A"]) & set(ctx["query_rules"]))
        assert (logic.adjudicate(ctx, old) == "refer") == (not mandate)


def test_changes_to_refer_are_always_receipt_a(built: tuple[Path, pd.DataFrame]) -> None:
    main = _main(built[1])
    to_refer = main[(main["new_verdict"] == "refer") & (main["old_verdict"] != "refer")]
    assert len(to_refer) and all(list(r) == ["A"] for r in to_refer["receipt"])
    from_refer = main[(main["old_verdict"] == "refer") & (main["new_verdict"] != "refer")]
    assert all(all("A" in acc for acc in r) for r in from_refer["receipt"])


def test_bad_input_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--scale"):
        build(BuildConfig(tmp_path, scale=0))
    with pytest.raises(UserError, match="reasonbench.parquet"):
        audit(tmp_path / "missing")


def test_cli_build_and_audit_exit_codes(built: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    from alignment.cli import COMMANDS
    from alignment.cli.reasonbench import register

    assert "alignment.cli.reasonbench" in COMMANDS
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    small = tmp_path / "small"
    args = parser.parse_args(
        ["reasonbench", "build", "--out", str(small), "--scale", "0.01", "--workers", "1", "--quiet"]
    )
    assert args.func(args) == 0 and (small / "_manifest.json").exists()
    args = parser.parse_args(["reasonbench", "audit", str(built[0])])
    assert args.func(args) == 0
    leaky = tmp_path / "leaky"
    leaky.mkdir()
    df = built[1].copy()
    df.loc[df.index[-1], "split"] = "train"  # a locked control leaks its unit into train
    df.to_parquet(leaky / "reasonbench.parquet", index=False)
    args = parser.parse_args(["reasonbench", "audit", str(leaky)])
    assert args.func(args) == 1


@pytest.mark.slow
def test_full_default_build_reproduces_the_published_counts(tmp_path: Path) -> None:
    build(BuildConfig(tmp_path, quiet=True))
    df = pd.read_parquet(tmp_path)
    assert counts(df) == PUBLISHED
    main = _main(df)
    assert set(main["min_receipt_size"]) == {0, 1, 2, 3}
    assert main.groupby("split")["unit_id"].nunique()["locked"] == 102


def test_second_build_on_a_held_folder_is_refused(tmp_path: Path, lock_in_other_process) -> None:
    """Two processes on one --out: the second fails at once (exit 2, one line naming the holder)
    and writes nothing; once the first is gone the same command builds."""
    out = tmp_path / "rb"
    out.mkdir()
    argv = [sys.executable, "-m", "alignment.cli", "reasonbench", "build", "--out", str(out), "--scale", "0.01",
            "--workers", "1", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    with lock_in_other_process(out) as pid:
        second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert second.returncode == 2, second.stderr
    assert second.stderr.count("\n") == 1 and f"pid {pid}" in second.stderr and "in use" in second.stderr
    assert not (out / "reasonbench.parquet").exists() and not (out / "_manifest.json").exists()
    again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert len(pd.read_parquet(out)) == len(pd.read_parquet(out / "reasonbench.parquet")) > 0
