"""`.venv/bin/python -m pytest -q tests/test_reasonbench_certify.py`: certification by execution.

Certificates come from executing hybrids through the benchmark's adjudicators: gold claims
certify, wrong ones do not, a cube can imply the right receipt with wrong cells, unparseable
output certifies nothing, and the stored gold columns are never read.
"""

from __future__ import annotations

import pandas as pd
import pytest

from alignment.reasonbench.benchmark.build import BuildConfig, build
from alignment.reasonbench.experiments.certify import Executor, certificate
from alignment.reasonbench.experiments.targets import (
    TARGETS,
    gold_fields,
    parse,
    serialise,
    targets_table,
)


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    out = tmp_path_factory.mktemp("rbc")
    build(BuildConfig(out, seed=2, scale=0.02, quiet=True, workers=1))
    table = targets_table(pd.read_parquet(out / "reasonbench.parquet"))
    return table[table["split"] == "locked"].to_dict("records")


def test_gold_claims_certify_at_their_execution_cost(rows: list[dict]) -> None:
    ex = Executor()
    for r in rows:
        for t in TARGETS:
            cert = certificate(r, t, parse(t, r[f"completion_{t}"]), ex)
            assert cert["certified"], (t, r["id"])
            stable = not r["receipt"]
            want = {"direct_verdict": 2, "cube": 8}.get(t, 2 if stable else None)
            if want is not None:
                assert cert["executions"] == want
            else:
                assert 3 <= cert["executions"] <= 8
            assert cert["cells_certified"] is (True if t == "cube" else None)


def test_wrong_claims_fail_and_unparseable_output_certifies_nothing(rows: list[dict]) -> None:
    ex = Executor()
    changed = next(r for r in rows if r["receipt"])
    fields = gold_fields(changed)
    wrong = serialise("direct_receipt", {**fields, "receipt": []})
    assert not certificate(changed, "direct_receipt", parse("direct_receipt", wrong), ex)["certified"]
    flipped = {**fields, "old": "approve" if fields["old"] != "approve" else "deny"}
    assert not certificate(changed, "direct_verdict", parse("direct_verdict", serialise("direct_verdict", flipped)), ex)["certified"]
    bad = certificate(changed, "cube", parse("cube", "approve"), ex)
    assert bad == {"certified": False, "cells_certified": False, "executions": 0}


def test_a_cube_can_imply_the_right_receipt_with_wrong_cells(rows: list[dict]) -> None:
    stable = next(r for r in rows if not r["receipt"])
    cells = dict(gold_fields(stable)["cells"])
    cells["G"] = next(v for v in ("approve", "deny", "refer") if v != cells["G"])
    cert = certificate(stable, "cube", parse("cube", serialise("cube", {"cells": cells})), Executor())
    assert cert["certified"] and cert["cells_certified"] is False  # endpoints agree: empty family


def test_certification_reads_the_states_not_the_stored_labels(rows: list[dict]) -> None:
    r = next(r for r in rows if any(len(k) == 1 for k in r["receipt"]))  # 6 of 8 cells executed
    claim = parse("direct_receipt", r["completion_direct_receipt"])
    tampered = {**r, "receipt": [], "cube": "{}", "old_verdict": "x", "new_verdict": "y"}
    ex = Executor()
    assert certificate(tampered, "direct_receipt", claim, ex)["certified"]
    calls = ex.adjudicator_calls
    certificate(tampered, "cube", parse("cube", r["completion_cube"]), ex)
    assert 0 < ex.adjudicator_calls - calls < 8  # cached cells are reused, new ones executed once
