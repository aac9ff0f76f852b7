"""Stage outputs carry their integrity: a file cut short or with flipped bytes is never reused; the
stage is recomputed with a line naming the file, and the run ends with the rows of the intact run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from alignment.cli import main
from alignment.disk.integrity import HASH
from alignment.runner import STAGE_NAMES
from alignment.store import RunDir


def copy_run(tiny_full_run, dest: Path) -> tuple[Path, Path, Path]:
    cfg, ref, _ = tiny_full_run
    shutil.copytree(ref, dest, ignore=shutil.ignore_patterns(".lock"))
    return cfg, ref, dest


def finished(run: Path) -> list[str]:
    return [s for s in STAGE_NAMES if (run / s / "manifest.json").is_file()]


def biggest_file(run: Path, stage: str) -> Path:
    files = json.loads((run / stage / "manifest.json").read_text())["files"]
    return run / stage / max(files, key=lambda f: (files[f]["size"], f))


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(b ^ 0xFF for b in data[mid:mid + 64])
    path.write_bytes(bytes(data))


def parquet_rows(run: Path) -> dict[str, pd.DataFrame]:
    return {str(p.relative_to(run)): pd.read_parquet(p) for p in sorted(run.glob("*/**/*.parquet"))
            if "shards" not in p.parts and "gen" not in p.parts}


def test_every_manifest_records_each_file_it_wrote(tiny_full_run) -> None:
    _, ref, _ = tiny_full_run
    for stage in finished(ref):
        files = json.loads((ref / stage / "manifest.json").read_text())["files"]
        assert files, stage
        for rel, rec in files.items():
            assert (ref / stage / rel).stat().st_size == rec["size"] and len(rec[HASH]) == 32, (stage, rel)
    report = json.loads((ref / "report" / "manifest.json").read_text())["files"]
    assert {"../report.md", "../report.html"} <= set(report)  # written beside the stage folder


@pytest.mark.parametrize("damage", [truncate, flip])
def test_a_damaged_stage_file_is_recomputed_naming_it(tiny_full_run, tmp_path: Path, damage, capsys) -> None:
    cfg, ref, out = copy_run(tiny_full_run, tmp_path / "run")
    stages = finished(out)
    damaged = {s: biggest_file(out, s) for s in stages}
    for path in damaged.values():
        damage(path)
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    said = capsys.readouterr().out.splitlines()
    for stage, path in damaged.items():
        line = next((x for x in said if x.startswith(f"[{stage}] {path}")), None)
        assert line is not None and line.endswith(": recomputing the stage"), (stage, said)
        assert any(x.startswith(f"[{stage}] done in") for x in said), stage
    got, want = parquet_rows(out), parquet_rows(ref)
    assert set(got) == set(want)
    for name, df in want.items():
        pd.testing.assert_frame_equal(got[name], df, obj=name)
    assert main(["run", str(cfg), "--out", str(out)]) == 0  # now intact: every stage reused
    assert all("up to date" in x or "off in this config" in x for x in capsys.readouterr().out.splitlines()
               if x.startswith("["))


def test_a_stage_run_alone_never_reads_a_damaged_input(tiny_full_run, tmp_path: Path, capsys) -> None:
    """`alignment score` alone cannot recompute generate: it stops with one line naming the file."""
    cfg, _, out = copy_run(tiny_full_run, tmp_path / "run")
    flip(out / "generate" / "data.parquet")
    (out / "score" / "manifest.json").unlink()
    assert main(["score", str(cfg), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{out}/generate/data.parquet no longer has the content" in err[0], err
    assert "must be recomputed" in err[0]


def test_an_old_manifest_without_files_is_checked_by_reading_then_recorded(tiny_full_run, tmp_path: Path,
                                                                           capsys) -> None:
    """Manifests from before files were recorded: an unreadable Parquet file reruns the stage;
    an intact stage is reused and its files recorded then."""
    cfg, _, out = copy_run(tiny_full_run, tmp_path / "run")
    for stage in ("bon", "score"):
        path = out / stage / "manifest.json"
        old = json.loads(path.read_text())
        del old["files"]
        path.write_text(json.dumps(old))
    truncate(out / "score" / "data.parquet")
    assert main(["run", str(cfg), "--out", str(out)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert any(x.startswith(f"[score] {out}/score/data.parquet is unreadable") for x in said), said
    assert "[bon] up to date, skipped" in said
    assert "files" in RunDir(out).manifest("bon") and RunDir(out).damage("bon") is None
