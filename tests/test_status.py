"""`alignment status RUN_DIR`: done, stale, damaged, missing, running and off, each seen; exit 0
only when every stage that is on is done and intact; `--json` for scripts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from alignment.cli import main


def copy_run(tiny_full_run, dest: Path) -> tuple[Path, Path]:
    cfg, ref, _ = tiny_full_run
    shutil.copytree(ref, dest, ignore=shutil.ignore_patterns(".lock"))
    return cfg, dest


def states(out: Path, capsys, *extra: str) -> tuple[int, dict[str, dict]]:
    code = main(["status", str(out), *extra, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] == (code == 0)
    return code, {r["stage"]: r for r in doc["stages"]}


def test_a_finished_run_is_done_except_what_its_config_turns_off(tiny_full_run, tmp_path: Path, capsys) -> None:
    _, out = copy_run(tiny_full_run, tmp_path / "run")
    code, got = states(out, capsys)
    assert code == 0
    assert got["audit"]["state"] == "off"  # this config turns the audit off
    assert {r["state"] for s, r in got.items() if s != "audit"} == {"done"}
    assert main(["status", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 12 and lines[0].split() == ["build", "done"]


def test_damaged_missing_and_stale_stages(tiny_full_run, tmp_path: Path, capsys) -> None:
    cfg, out = copy_run(tiny_full_run, tmp_path / "run")
    data = out / "score" / "data.parquet"
    data.write_bytes(data.read_bytes()[:100])
    (out / "bon" / "manifest.json").unlink()
    code, got = states(out, capsys)
    assert code == 1
    assert got["score"]["state"] == "damaged" and str(data) in got["score"]["detail"]
    assert got["bon"]["state"] == "missing"
    assert got["generate"]["state"] == "done"
    # Against an edited config: generate changes, and so does everything reading it.
    code, got = states(out, capsys, str(cfg), "--set", "generation.max_new_tokens=7")
    assert code == 1
    assert got["build"]["state"] == "done" and got["generate"]["state"] == "stale"
    assert got["attribute"]["state"] == "stale" and got["report"]["state"] == "stale"
    assert main(["status", str(out)]) == 1
    lines = {x.split()[0]: x.split(None, 1)[1] for x in capsys.readouterr().out.splitlines()}
    assert lines["score"].startswith(f"damaged: {data} has 100 bytes") and lines["bon"] == "missing"


def test_a_run_in_progress_is_running(tiny_full_run, tmp_path: Path, capsys, lock_in_other_process) -> None:
    _, out = copy_run(tiny_full_run, tmp_path / "run")
    for stage in ("ack", "bon", "report"):
        (out / stage / "manifest.json").unlink()
    with lock_in_other_process(out) as pid:
        code, got = states(out, capsys)
    assert code == 1
    assert got["ack"] == {"stage": "ack", "state": "running", "detail": f"pid {pid} holds the run dir"}
    assert got["bon"]["state"] == got["report"]["state"] == "missing"
    assert got["score"]["state"] == "done"


def test_a_folder_that_is_no_run_dir_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["status", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "config.yaml: not found" in err[0]
