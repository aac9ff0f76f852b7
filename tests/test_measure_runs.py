"""Measures over finished runs: run_diff (stage outputs compared) and hash_overhead (hashing's cost)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from alignment.disk import integrity
from alignment.measure import hash_overhead, run_diff


def _stage(run: Path, name: str, df: pd.DataFrame, seconds: float = 10.0) -> None:
    folder = run / name
    folder.mkdir(parents=True)
    df.to_parquet(folder / "data.parquet", index=False)
    (folder / "manifest.json").write_text(json.dumps({"seconds": seconds, "files": integrity.record(folder)}))


def test_run_diff_names_identical_changed_and_new(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    same = pd.DataFrame({"example_id": ["x", "y"], "v": [1.0, 2.0]})
    _stage(a, "generate", same)
    _stage(b, "generate", same)
    _stage(a, "score", same.assign(old=[0, 0]))
    _stage(b, "score", same.iloc[::-1].assign(v=[2.0, 1.0 + 1e-12], new=[1, 1]))  # reordered, float noise
    _stage(a, "bon", same)
    _stage(b, "bon", same.assign(v=[1.0, 3.0]))
    _stage(a, "ack", same)
    _stage(a, "judge", same)
    _stage(b, "judge", pd.concat([same, pd.DataFrame({"example_id": ["z"], "v": [9.0]})]))  # a row added
    diff = run_diff.run_diff(a, b)
    assert diff["generate"] == {"identical_bytes": True}
    assert diff["score"]["differ"] == [] and diff["score"]["only_a"] == ["old"] and diff["score"]["only_b"] == ["new"]
    assert diff["bon"]["differ"] == ["v"]
    assert diff["ack"] == {"missing_in_b": True}
    assert diff["judge"]["matched"] == 2 and diff["judge"]["differ"] == []
    assert run_diff.main([str(a), str(b), "--json", str(tmp_path / "d.json")]) == 0
    out = capsys.readouterr().out
    assert "generate: identical bytes" in out and "bon: rows 2 / 2; differ: v (max |d| 1.0e+00)" in out
    data = json.loads((tmp_path / "d.json").read_text())
    assert data["stages"] == diff and data["command"].startswith("python -m alignment.measure.run_diff")
    assert "| bon | no | 2 / 2 | v (1.0e+00) |" in run_diff.page(data)
    assert run_diff.main([str(a), str(tmp_path / "nope")]) == 2


def test_hash_overhead_times_every_stage_and_renders(tmp_path: Path) -> None:
    run = tmp_path / "seed-0"
    _stage(run, "generate", pd.DataFrame({"t": ["x" * 1000] * 500}), seconds=20.0)
    _stage(run, "score", pd.DataFrame({"v": range(1000)}), seconds=5.0)
    r = hash_overhead.run_overhead(run)
    assert r["stages"] == 2 and r["files"] == 2 and r["stage_seconds"] == 25.0
    assert r["bytes"] == sum((run / s / "data.parquet").stat().st_size for s in ("generate", "score"))
    assert r["record_seconds"] > 0 and r["check_seconds"] > 0 and 0 < r["overhead"] < 1
    out = tmp_path / "h.json"
    assert hash_overhead.main([str(run), "--record", str(out)]) == 0
    page = hash_overhead.page(json.loads(out.read_text()))
    assert "| seed-0 | 2 | 2 |" in page and "Largest overhead over 1 run(s)" in page
    assert hash_overhead.main([str(tmp_path / "empty")]) == 2


def test_hint_run_records_the_report_figures(tmp_path: Path) -> None:
    from alignment.measure import hint_run

    run = tmp_path / "hints"
    build = pd.DataFrame({"id": ["e1", "e2"], "unit_id": ["q1", "q2"], "hint_answer": [1, 2],
                          "options": [["a", "b", "c", "d"]] * 2, "hint_types": [["sycophancy"]] * 2,
                          "system": ["s"] * 2, "query": ["q"] * 2, "cf_query": ["c"] * 2, "answer": [0, 2]})
    gen = pd.DataFrame({"example_id": ["e1", "e1", "e2", "e2"], "variant": ["orig", "cf"] * 2, "sample": [0] * 4,
                        "text": ["t"] * 4, "pred": [1, 0, 2, 2], "valid": [True] * 4, "correct": [False, True, True, True]})
    ack = gen[["example_id", "variant", "sample"]].assign(ack=[True, False, False, False])
    for name, df in (("build", build), ("generate", gen), ("ack", ack)):
        _stage(run, name, df, seconds=3.0)
    data = hint_run.hint_record(run)
    (fig,) = data["figures"]
    assert fig["hint"] == "sycophancy" and fig["switched"] == 1 and fig["verbalised"] == 1.0
    assert fig["following"] == pytest.approx(0.5) and data["questions"] == 2 and data["valid"] == 1.0
    out = tmp_path / "h.json"
    assert hint_run.main([str(run), "--wall", "12", "--record", str(out)]) == 0
    page = hint_run.page(json.loads(out.read_text()))
    assert "| sycophancy | 2 | 2 | 100.0% / 50.0% | +50.0 pp" in page and "9 s in all; the whole command took 12 s wall" in page
    (run / "ack" / "data.parquet").unlink()
    assert hint_run.main([str(run)]) == 2
