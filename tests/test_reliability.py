"""Malformed inputs through `alignment.cli.main`: exit 2, one line on stderr, never a traceback.

Each case builds its bad input under tmp_path and returns the argv; the test runs it in-process.
Positive cases check that what used to be silently dropped (`--set` on `build --data-dir`,
`--task` with a CONFIG, `{{x}}` in a data row) now applies, and that the judge's JSONL
round-trips. Run-dir integrity (lock, umask, damaged manifests) is tested at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment.cli import main
from alignment.store import locked

BIG = "9" * 5000  # more digits than Python converts by default


def cfg_file(tmp: Path, data: dict | str | bytes, name: str = "c.yaml") -> str:
    p = tmp / name
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(p)


def tiny_cfg(tmp: Path, **sections: dict) -> str:
    data = {"task": {"name": "mathbook", "source": "synthetic", "n_examples": 1}, **sections}
    return cfg_file(tmp, data)


def aqua_dir(tmp: Path, rows: list[dict] | bytes, split: str = "test") -> str:
    d = tmp / "aqua"
    d.mkdir(exist_ok=True)
    p = d / f"{split}.json"
    if isinstance(rows, bytes):
        p.write_bytes(rows)
    else:
        p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(d)


def aqua_row(i: int, **kw: str) -> dict:
    return {"question": f"What is {i} + {i}?", "options": [f"{L}){i + k}" for k, L in enumerate("ABCDE")],
            "rationale": f"{i} + {i} = {2 * i}.", "correct": "A", **kw}


def wino_dir(tmp: Path, stats: str, templates: str | None = None) -> str:
    d = tmp / "wino"
    d.mkdir(exist_ok=True)
    (d / "occupations-stats.tsv").write_text(stats)
    (d / "templates.tsv").write_text(templates or (
        "occupation(0)\tother-participant(1)\tanswer\tsentence\n"
        "nurse\tpatient\t0\tThe $OCCUPATION helped the $PARTICIPANT because $NOM_PRONOUN was kind.\n"
    ))
    return str(d)


STATS = "occupation\tbergsma_pct_female\tbls_pct_female\tbls_year\n"


def jsonl(tmp: Path, content: str | bytes, name: str = "in.jsonl") -> str:
    p = tmp / name
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(p)


def judge(tmp: Path, content: str | bytes) -> list[str]:
    return ["judge", "--task", "mathbook", "--input", jsonl(tmp, content), "--output", str(tmp / "o.jsonl")]


def rb_dir(tmp: Path, df: pd.DataFrame | bytes) -> str:
    d = tmp / "rb"
    d.mkdir()
    if isinstance(df, bytes):
        (d / "reasonbench.parquet").write_bytes(df)
    else:
        df.to_parquet(d / "reasonbench.parquet")
    return str(d)


Case = Callable[[Path], list[str]]
CASES: dict[str, Case] = {
    # ---- argparse usage errors
    "no command": lambda t: [],
    "unknown command": lambda t: ["frobnicate"],
    "unknown flag": lambda t: ["run", tiny_cfg(t), "--bogus"],
    "run without config": lambda t: ["run"],
    "--threads not a number": lambda t: ["--threads", "many", "config", "show"],
    "--threads 0": lambda t: ["--threads", "0", "config", "show"],
    "--threads huge": lambda t: ["--threads", BIG, "config", "show"],
    "config bad action": lambda t: ["config", "list"],
    "build --n not int": lambda t: ["build", "--task", "mathbook", "--data-dir", str(t), "--n", "x"],
    "judge bad --task": lambda t: ["judge", "--task", "poetry", "--input", "a", "--output", "b"],
    "reasonbench no action": lambda t: ["reasonbench"],
    "reasonbench build no --out": lambda t: ["reasonbench", "build"],
    "reasonbench --scale not a number": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "lots"],
    "organism bad action": lambda t: ["organism", "eat"],
    "bench --n not int": lambda t: ["bench", "--n", "x"],
    # ---- config files
    "config missing": lambda t: ["config", "show", str(t / "nope.yaml")],
    "config is a directory": lambda t: ["config", "show", str(t)],
    "config not UTF-8": lambda t: ["config", "show", cfg_file(t, b"name: caf\xe9\n")],
    "config binary": lambda t: ["config", "show", cfg_file(t, bytes(range(256)) * 4)],
    "config NUL byte": lambda t: ["config", "show", cfg_file(t, "name: a\0b\n")],
    "config path NUL": lambda t: ["config", "show", str(t) + "/a\0b.yaml"],
    "config top-level list": lambda t: ["config", "show", cfg_file(t, "- 1\n- 2\n")],
    "config top-level string": lambda t: ["config", "show", cfg_file(t, "hello\n")],
    "config invalid YAML": lambda t: ["config", "show", cfg_file(t, "a: [1, 2\n")],
    "config tab indentation": lambda t: ["config", "show", cfg_file(t, "task:\n\tname: x\n")],
    "config deep nesting": lambda t: ["config", "show", cfg_file(t, "a: " + "[" * 20000 + "]" * 20000 + "\n")],
    "config huge int": lambda t: ["config", "show", cfg_file(t, f"task:\n  n_examples: {BIG}\n")],
    "config int above 2**63": lambda t: ["config", "show", cfg_file(t, f"task:\n  seed: {2**64}\n")],
    "config huge float int": lambda t: ["config", "show", cfg_file(t, f"generation:\n  temperature: {2**70}\n")],
    "config duplicate section": lambda t: ["config", "show", cfg_file(t, "generation:\n  n_samples: 2\ngeneration:\n  top_p: 0.5\n")],
    "config duplicate field": lambda t: ["config", "show", cfg_file(t, "bon:\n  ns: [1]\n  ns: [2]\n")],
    "config duplicate in list item": lambda t: ["config", "show", cfg_file(t, "x:\n  - {a: 1, a: 2}\n")],
    "config unknown section": lambda t: ["config", "show", cfg_file(t, {"generatoin": {}})],
    "config unknown field": lambda t: ["config", "show", cfg_file(t, {"generation": {"temp": 1}})],
    "config non-string key": lambda t: ["config", "show", cfg_file(t, "1: 2\n")],
    "config section not a mapping": lambda t: ["config", "show", cfg_file(t, {"generation": [1, 2]})],
    "temperature inf": lambda t: ["config", "show", cfg_file(t, "generation:\n  temperature: .inf\n")],
    "temperature nan": lambda t: ["config", "show", cfg_file(t, "generation:\n  temperature: .nan\n")],
    "temperature -inf": lambda t: ["config", "show", cfg_file(t, "generation:\n  temperature: -.inf\n")],
    "top_p nan": lambda t: ["config", "show", cfg_file(t, "generation:\n  top_p: .nan\n")],
    "dpo beta inf": lambda t: ["config", "show", cfg_file(t, "dpo:\n  beta: .inf\n")],
    "dpo learning_rate inf": lambda t: ["config", "show", cfg_file(t, "dpo:\n  learning_rate: .inf\n")],
    "dpo epochs inf": lambda t: ["config", "show", cfg_file(t, "dpo:\n  epochs: .inf\n")],
    "dpo valid_fraction nan": lambda t: ["config", "show", cfg_file(t, "dpo:\n  valid_fraction: .nan\n")],
    "dpo temperature nan": lambda t: ["config", "show", cfg_file(t, "dpo:\n  temperature: .nan\n")],
    "vllm memory nan": lambda t: ["config", "show", cfg_file(t, "generation:\n  gpu_memory_utilization: .nan\n")],
    "reward memory 5": lambda t: ["config", "show", cfg_file(t, "reward:\n  gpu_memory_utilization: 5\n")],
    "bon.ns empty": lambda t: ["config", "show", cfg_file(t, {"bon": {"ns": []}})],
    "bon.ns repeated": lambda t: ["config", "show", cfg_file(t, {"bon": {"ns": [1, 1]}})],
    "bon.ns zero": lambda t: ["config", "show", cfg_file(t, {"bon": {"ns": [0]}})],
    "bon.variants empty": lambda t: ["config", "show", cfg_file(t, {"bon": {"variants": []}})],
    "bon.variants unknown": lambda t: ["config", "show", cfg_file(t, {"bon": {"variants": ["rmx"]}})],
    "bon.variants repeated": lambda t: ["config", "show", cfg_file(t, {"bon": {"variants": ["rm", "rm"]}})],
    "dpo.variants empty": lambda t: ["config", "show", cfg_file(t, {"dpo": {"variants": []}})],
    "dpo.seeds empty": lambda t: ["config", "show", cfg_file(t, {"dpo": {"seeds": []}})],
    "dpo.target_modules empty": lambda t: ["config", "show", cfg_file(t, {"dpo": {"target_modules": []}})],
    "judge.members one": lambda t: ["config", "show", cfg_file(t, {"judge": {"name": "ensemble", "members": ["keyword"]}})],
    "task.splits empty": lambda t: ["config", "show", cfg_file(t, {"task": {"splits": []}})],
    "task.splits repeated": lambda t: ["config", "show", cfg_file(t, {"task": {"splits": ["test", "test"]}})],
    "task.splits path": lambda t: ["config", "show", cfg_file(t, {"task": {"splits": ["../x"]}})],
    "task.splits not a list": lambda t: ["config", "show", cfg_file(t, {"task": {"splits": "test"}})],
    "task.name unknown": lambda t: ["config", "show", cfg_file(t, {"task": {"name": "mathbok"}})],
    "task.source unknown": lambda t: ["config", "show", cfg_file(t, {"task": {"source": "web"}})],
    "task local without data_dir": lambda t: ["config", "show", cfg_file(t, {"task": {"source": "local"}})],
    "task.n_examples negative": lambda t: ["config", "show", cfg_file(t, {"task": {"n_examples": -1}})],
    "task.n_examples float": lambda t: ["config", "show", cfg_file(t, {"task": {"n_examples": 2.5}})],
    "task.n_examples bool": lambda t: ["config", "show", cfg_file(t, {"task": {"n_examples": True}})],
    "n_samples string": lambda t: ["config", "show", cfg_file(t, {"generation": {"n_samples": "four"}})],
    "n_samples zero": lambda t: ["config", "show", cfg_file(t, {"generation": {"n_samples": 0}})],
    "top_p 2": lambda t: ["config", "show", cfg_file(t, {"generation": {"top_p": 2}})],
    "batch_size 0": lambda t: ["config", "show", cfg_file(t, {"generation": {"batch_size": 0}})],
    "max_model_len 0": lambda t: ["config", "show", cfg_file(t, {"generation": {"max_model_len": 0}})],
    "generation.device cudaXYZ": lambda t: ["config", "show", cfg_file(t, {"generation": {"device": "cudaXYZ"}})],
    "generation.device gpu": lambda t: ["config", "show", cfg_file(t, {"generation": {"device": "gpu"}})],
    "generation.device cuda:": lambda t: ["config", "show", cfg_file(t, {"generation": {"device": "cuda:"}})],
    "reward.device tpu": lambda t: ["config", "show", cfg_file(t, {"reward": {"device": "tpu"}})],
    "judge.device cudax": lambda t: ["config", "show", cfg_file(t, {"judge": {"device": "cudax"}})],
    "dpo.device mps-ish": lambda t: ["config", "show", cfg_file(t, {"dpo": {"device": "cuda:0:1"}})],
    "generation.dtype int8": lambda t: ["config", "show", cfg_file(t, {"generation": {"dtype": "int8"}})],
    "generation.model empty": lambda t: ["config", "show", "--set", "generation.model="],
    "reward.model blank": lambda t: ["config", "show", "--set", "reward.model=' '"],
    "judge.model empty": lambda t: ["config", "show", "--set", "judge.model=''"],
    "dpo.model empty": lambda t: ["config", "show", "--set", "dpo.model=''"],
    "name ..": lambda t: ["config", "show", cfg_file(t, {"name": ".."})],
    "name .": lambda t: ["config", "show", cfg_file(t, {"name": "."})],
    "name absolute": lambda t: ["config", "show", cfg_file(t, {"name": "/tmp/x"})],
    "name with slash": lambda t: ["config", "show", cfg_file(t, {"name": "a/b"})],
    "name with backslash": lambda t: ["config", "show", cfg_file(t, {"name": "a\\b"})],
    "name empty": lambda t: ["config", "show", cfg_file(t, {"name": ""})],
    "name NUL via --set": lambda t: ["config", "show", "--set", "name=a\0b"],
    "name not a string": lambda t: ["config", "show", cfg_file(t, {"name": [1]})],
    "--set without =": lambda t: ["config", "show", "--set", "generation.n_samples"],
    "--set empty key": lambda t: ["config", "show", "--set", "=3"],
    "--set empty key part": lambda t: ["config", "show", "--set", "generation..n_samples=3"],
    "--set unknown key": lambda t: ["config", "show", "--set", "bogus=1"],
    "--set into a value": lambda t: ["config", "show", "--set", "name.x=1"],
    "--set huge int": lambda t: ["config", "show", "--set", f"task.seed={BIG}"],
    "--set inf": lambda t: ["config", "show", "--set", "generation.temperature=.inf"],
    "--set 1e999": lambda t: ["config", "show", "--set", "dpo.beta=1e999"],
    "--set duplicate key in value": lambda t: ["config", "show", "--set", "bon={ns: [1], ns: [2]}"],
    # ---- run / stage commands
    "run --out is a file": lambda t: ["run", tiny_cfg(t), "--out", cfg_file(t, "x", "file.txt"), "--quiet"],
    "build --out under a file": lambda t: ["build", tiny_cfg(t), "--out", cfg_file(t, "x", "file.txt") + "/run", "--quiet"],
    "build --out NUL": lambda t: ["build", tiny_cfg(t), "--out", "a\0b", "--quiet"],
    "generate without config": lambda t: ["generate", "--out", str(t / "r")],
    "generate before build": lambda t: ["generate", tiny_cfg(t), "--out", str(t / "r"), "--quiet"],
    "report before anything": lambda t: ["report", tiny_cfg(t), "--out", str(t / "r"), "--quiet"],
    "build no config no flags": lambda t: ["build", "--out", str(t / "r")],
    "build --task without --data-dir": lambda t: ["build", "--task", "mathbook", "--out", str(t / "r")],
    "build --data-dir without --out": lambda t: ["build", "--task", "mathbook", "--data-dir", str(t)],
    "build --data-dir missing": lambda t: ["build", "--task", "mathbook", "--data-dir", str(t / "no"), "--out", str(t / "r")],
    "build --data-dir is a file": lambda t: ["build", "--task", "mathbook", "--data-dir", cfg_file(t, "x", "f"), "--out", str(t / "r")],
    "build --data-dir no splits": lambda t: ["build", "--task", "mathbook", "--data-dir", str(t), "--out", str(t / "r")],
    "build --data-dir --set unknown": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, [aqua_row(i) for i in range(4)]),
                                                 "--out", str(t / "r"), "--set", "bogus=1", "--quiet"],
    "build --data-dir --set bad value": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, [aqua_row(i) for i in range(4)]),
                                                   "--out", str(t / "r"), "--set", "task.n_examples=-3", "--quiet"],
    "build --task unknown": lambda t: ["build", "--task", "poetry", "--data-dir", str(t), "--out", str(t / "r")],
    "build CONFIG --task unknown": lambda t: ["build", tiny_cfg(t), "--task", "poetry", "--out", str(t / "r")],
    "build --n negative": lambda t: ["build", tiny_cfg(t), "--n", "-1", "--out", str(t / "r")],
    "build --splits repeated": lambda t: ["build", tiny_cfg(t), "--splits", "test", "test", "--out", str(t / "r")],
    # ---- task data rows
    "aqua not UTF-8": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, b'{"question": "\xff"}\n'), "--out", str(t / "r")],
    "aqua binary": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, bytes(range(256))), "--out", str(t / "r")],
    "aqua not JSON": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, b"not json\n"), "--out", str(t / "r")],
    "aqua too few rows": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, [aqua_row(1), aqua_row(2)]), "--out", str(t / "r")],
    "aqua all duplicates": lambda t: ["build", "--task", "mathbook", "--data-dir", aqua_dir(t, [aqua_row(1)] * 5), "--out", str(t / "r")],
    "aqua missing rationale": lambda t: ["build", "--task", "mathbook", "--data-dir",
                                         aqua_dir(t, [aqua_row(i) for i in range(3)] + [{"question": "q", "options": [], "correct": "A"}]), "--out", str(t / "r")],
    "aqua four options": lambda t: ["build", "--task", "mathbook", "--data-dir",
                                    aqua_dir(t, [aqua_row(i) for i in range(3)] + [aqua_row(9, options=["A)1", "B)2", "C)3", "D)4"])]), "--out", str(t / "r")],
    "aqua bad correct": lambda t: ["build", "--task", "mathbook", "--data-dir",
                                   aqua_dir(t, [aqua_row(i) for i in range(3)] + [aqua_row(9, correct="F")]), "--out", str(t / "r")],
    "aqua source slot in question": lambda t: ["build", "--task", "mathbook", "--data-dir",
                                               aqua_dir(t, [aqua_row(i) for i in range(3)] + [aqua_row(9, question="{{source:instruction}}")]), "--out", str(t / "r")],
    "aqua NUL in rationale": lambda t: ["build", "--task", "mathbook", "--data-dir",
                                        aqua_dir(t, [aqua_row(i) for i in range(3)] + [aqua_row(9, rationale="a\0b")]), "--out", str(t / "r")],
    "wino duplicate occupation": lambda t: ["build", "--task", "biasqa", "--data-dir",
                                            wino_dir(t, STATS + "nurse\t90\t90.0\t2015\nnurse\t10\t10.0\t2015\n"), "--out", str(t / "r")],
    "wino pct not a number": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "nurse\t90\tmany\t2015\n"), "--out", str(t / "r")],
    "wino pct 150": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "nurse\t90\t150\t2015\n"), "--out", str(t / "r")],
    "wino pct nan": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "nurse\t90\tnan\t2015\n"), "--out", str(t / "r")],
    "wino unknown occupation": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "doctor\t90\t40\t2015\n"), "--out", str(t / "r")],
    "wino no pronoun slot": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "nurse\t90\t90\t2015\n",
                                       "occupation(0)\tother-participant(1)\tanswer\tsentence\nnurse\tpatient\t0\tThe $OCCUPATION left.\n"), "--out", str(t / "r")],
    "wino bad answer": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "nurse\t90\t90\t2015\n",
                                  "occupation(0)\tother-participant(1)\tanswer\tsentence\nnurse\tpatient\t7\tThe $OCCUPATION said $NOM_PRONOUN.\n"), "--out", str(t / "r")],
    "wino occupation is person": lambda t: ["build", "--task", "biasqa", "--data-dir", wino_dir(t, STATS + "person\t50\t60\t2015\n",
                                            "occupation(0)\tother-participant(1)\tanswer\tsentence\nperson\tpatient\t0\tThe $OCCUPATION said $NOM_PRONOUN left.\n"),
                                            "--splits", "train", "test", "--out", str(t / "r")],
    "wino stats missing": lambda t: ["build", "--task", "biasqa", "--data-dir", str(t), "--out", str(t / "r")],
    # ---- judge inputs
    "judge input not UTF-8": lambda t: judge(t, b'{"full_response": "caf\xe9"}\n'),
    "judge input binary": lambda t: judge(t, bytes(range(256))),
    "judge input deep nesting": lambda t: judge(t, '{"full_response": "x", "a": ' + "[" * 200000 + "]" * 200000 + "}\n"),
    "judge input NaN literal": lambda t: judge(t, '{"full_response": "x", "a": NaN}\n'),
    "judge input Infinity literal": lambda t: judge(t, '{"full_response": "x", "a": -Infinity}\n'),
    "judge input not JSON": lambda t: judge(t, "hello\n"),
    "judge input a list": lambda t: judge(t, "[1, 2]\n"),
    "judge input missing field": lambda t: judge(t, '{"text": "x"}\n'),
    "judge input response not a string": lambda t: judge(t, '{"full_response": 3}\n'),
    "judge input is a directory": lambda t: ["judge", "--task", "mathbook", "--input", str(t), "--output", str(t / "o.jsonl")],
    "judge input missing": lambda t: ["judge", "--task", "mathbook", "--input", str(t / "no.jsonl"), "--output", str(t / "o.jsonl")],
    "judge output a directory": lambda t: ["judge", "--task", "mathbook", "--input", jsonl(t, '{"full_response": "x"}\n'), "--output", str(t)],
    "judge output under a file": lambda t: ["judge", "--task", "mathbook", "--input", jsonl(t, '{"full_response": "x"}\n'),
                                            "--output", jsonl(t, "x", "f") + "/o.jsonl"],
    "judge without --task": lambda t: ["judge", "--input", "a", "--output", "b"],
    "judge without --input": lambda t: ["judge", "--task", "mathbook", "--output", "b"],
    "judge unknown judge": lambda t: judge(t, '{"full_response": "x"}\n')[:1] + ["--judge", "magic"] + judge(t, '{"full_response": "x"}\n')[1:],
    "validate labels not UTF-8": lambda t: ["judge", "validate", "--task", "mathbook", "--labels", jsonl(t, b"\xff\xfe")],
    "validate labels empty": lambda t: ["judge", "validate", "--task", "mathbook", "--labels", jsonl(t, "\n\n")],
    "validate label not bool": lambda t: ["judge", "validate", "--task", "mathbook", "--labels", jsonl(t, '{"full_response": "x", "ack_label": "yes"}\n')],
    # ---- reasonbench
    "reasonbench --scale 1e-9": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "1e-9"],
    "reasonbench --scale 0": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "0"],
    "reasonbench --scale -1": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "-1"],
    "reasonbench --scale 2": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "2"],
    "reasonbench --scale nan": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "nan"],
    "reasonbench --scale inf": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "inf"],
    "reasonbench --workers 0": lambda t: ["reasonbench", "build", "--out", str(t / "r"), "--scale", "0.001", "--workers", "0"],
    "reasonbench --out a file": lambda t: ["reasonbench", "build", "--out", cfg_file(t, "x", "f"), "--scale", "0.001", "--quiet"],
    "audit missing dir": lambda t: ["reasonbench", "audit", str(t / "none")],
    "audit a file": lambda t: ["reasonbench", "audit", cfg_file(t, "x", "f")],
    "audit garbage parquet": lambda t: ["reasonbench", "audit", rb_dir(t, b"PAR1 garbage")],
    "audit wrong columns": lambda t: ["reasonbench", "audit", rb_dir(t, pd.DataFrame({"a": [1]}))],
    # ---- organism
    "organism unknown": lambda t: ["organism", "list", "organism-nope"],
}


def run_case(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def assert_one_line_exit_2(code: int, err: str) -> None:
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("alignment"), err


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_input(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert_one_line_exit_2(*run_case(CASES[name](tmp_path), capsys))


# ------------------------------------------------------------------ run dirs built once, damaged


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A config and a run dir holding a finished synthetic `build` stage (no model needed)."""
    root = tmp_path_factory.mktemp("built")
    cfg = tiny_cfg(root)
    out = root / "run"
    assert main(["build", cfg, "--out", str(out), "--quiet"]) == 0
    return Path(cfg), out


def damaged(built: tuple[Path, Path], tmp: Path, damage: Callable[[Path], None]) -> list[str]:
    cfg, out = built
    run = tmp / "run"
    shutil.copytree(out, run)
    damage(run)
    return ["generate", str(cfg), "--out", str(run), "--quiet"]


def _write(rel: str, content: bytes | str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        p = run / rel
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    return damage


def _mkdir(rel: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        p = run / rel
        p.unlink()
        p.mkdir()
    return damage


def _wrong_columns(run: Path) -> None:
    pd.DataFrame({"id": ["x"], "foo": [1]}).to_parquet(run / "build" / "data.parquet")


RUN_DAMAGE: dict[str, Callable[[Path], None]] = {
    "manifest is a list": _write("build/manifest.json", "[1, 2]"),
    "manifest is a string": _write("build/manifest.json", '"done"'),
    "manifest is binary": _write("build/manifest.json", bytes(range(256))),
    "manifest key not a string": _write("build/manifest.json", '{"key": [1]}'),
    "manifest deeply nested": _write("build/manifest.json", "[" * 100000 + "]" * 100000),
    "manifest is a directory": _mkdir("build/manifest.json"),
    "build data wrong columns": _wrong_columns,
    "build data garbage": _write("build/data.parquet", b"PAR1 not parquet"),
    "build data is a directory": _mkdir("build/data.parquet"),
    "config.yaml is a directory": _mkdir("config.yaml"),
    "lock file is a directory": lambda run: (run / ".lock").unlink() or (run / ".lock").mkdir(),
}


@pytest.mark.parametrize("name", list(RUN_DAMAGE))
def test_damaged_run_dir(name: str, built: tuple[Path, Path], tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    assert_one_line_exit_2(*run_case(damaged(built, tmp_path, RUN_DAMAGE[name]), capsys))


def test_second_process_on_a_run_dir_is_refused(built: tuple[Path, Path], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    cfg, out = built
    run = tmp_path / "run"
    shutil.copytree(out, run)
    with locked(run):  # as another process would: a separate open file description
        code, err = run_case(["build", str(cfg), "--out", str(run), "--quiet"], capsys)
    assert_one_line_exit_2(code, err)
    assert f"pid {os.getpid()}" in err and "in use" in err
    assert main(["build", str(cfg), "--out", str(run), "--quiet"]) == 0  # released afterwards


def test_artifacts_honour_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        out = tmp_path / "run"
        assert main(["build", tiny_cfg(tmp_path), "--out", str(out), "--quiet"]) == 0
    finally:
        os.umask(old)
    for rel in ("config.yaml", "build/data.parquet", "build/manifest.json"):
        assert stat.S_IMODE((out / rel).stat().st_mode) == 0o640, rel


# ---------------------------------------------- what used to be dropped silently now applies


def test_build_data_dir_applies_set(tmp_path: Path) -> None:
    d = aqua_dir(tmp_path, [aqua_row(i) for i in range(6)])
    out = tmp_path / "r"
    argv = ["build", "--task", "mathbook", "--data-dir", d, "--out", str(out), "--quiet", "--set", "task.n_examples=2"]
    assert main(argv) == 0
    assert len(pd.read_parquet(out / "build" / "data.parquet")) == 2
    assert yaml.safe_load((out / "config.yaml").read_text())["task"]["n_examples"] == 2


def test_build_config_applies_task_flag(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert main(["build", tiny_cfg(tmp_path), "--task", "biasqa", "--splits", "train", "--out", str(out), "--quiet"]) == 0
    df = pd.read_parquet(out / "build" / "data.parquet")
    assert set(df["task"]) == {"biasqa"} and set(df["split"]) == {"train"}


def test_template_braces_in_data_rows_stay_literal(tmp_path: Path) -> None:
    rows = [aqua_row(i) for i in range(3)] + [aqua_row(9, question="Is {{x}} or {{question}} a set?")]
    out = tmp_path / "r"
    argv = ["build", "--task", "mathbook", "--data-dir", aqua_dir(tmp_path, rows), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    df = pd.read_parquet(out / "build" / "data.parquet").set_index("unit_id")
    assert "Is {{x}} or {{question}} a set?" in df.loc["aqua-test-00003", "query"]


def test_duplicate_problems_are_dropped_and_counted(tmp_path: Path) -> None:
    rows = [aqua_row(i) for i in range(4)] + [aqua_row(1), aqua_row(2)]
    out = tmp_path / "r"
    argv = ["build", "--task", "mathbook", "--data-dir", aqua_dir(tmp_path, rows), "--out", str(out), "--quiet"]
    assert main(argv) == 0
    manifest = json.loads((out / "build" / "manifest.json").read_text())
    assert manifest["rows"]["dropped_duplicate_problems"] == 2 and manifest["rows"]["examples"] == 4
    df = pd.read_parquet(out / "build" / "data.parquet")
    for q, cf, src in zip(df["query"], df["cf_query"], df["sources"], strict=True):
        own = src[0]["original"].split(": ", 1)[1]  # the query's rationale
        assert own in q and own not in cf


def test_judge_jsonl_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "line\u2028separator\u2029para\x85next \u00e9 \U0001f600"
    src = tmp_path / "in.jsonl"
    line = json.dumps({"full_response": text, "n": [1, {"x": None}], "big": 1e300})
    src.write_text(line + "\n", encoding="utf-8")  # 1e999 (read as inf) is refused: see test_bad_input.py
    once, twice = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert main(["judge", "--task", "mathbook", "--input", str(src), "--output", str(once)]) == 0
    assert main(["judge", "--task", "mathbook", "--input", str(once), "--output", str(twice)]) == 0
    raw = once.read_text()
    assert "Infinity" not in raw and len(raw.strip().split("\n")) == 1
    a, b = (json.loads(p.read_text()) for p in (once, twice))
    assert a["full_response"] == text and a["big"] == 1e300 and a == b


def test_internal_error_is_one_line_with_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import alignment.cli.pipeline

    def boom(args: object) -> int:
        raise RuntimeError("a bug")

    monkeypatch.setenv("ALIGNMENT_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(alignment.cli.pipeline, "cmd_config", boom)
    code, err = run_case(["config", "show"], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    log = Path(err.strip().rsplit(" ", 1)[1])
    assert log.parent == tmp_path and "RuntimeError: a bug" in log.read_text()


# ------------------------------------------------------ damaged model files and shard folders


def gen_config(tmp: Path, model: Path) -> str:
    return tiny_cfg(tmp, generation={"model": str(model), "n_samples": 1, "max_new_tokens": 2,
                                     "batch_size": 2, "device": "cpu", "dtype": "float32"})


def test_truncated_safetensors_is_one_line(built: tuple[Path, Path], tiny_llama_dir: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_llama_dir, model)
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    run = tmp_path / "run"
    shutil.copytree(built[1], run)
    code, err = run_case(["generate", gen_config(tmp_path, model), "--out", str(run), "--quiet"], capsys)
    assert_one_line_exit_2(code, err)
    assert "cannot load model" in err


@pytest.mark.parametrize("damage", ["binary", "directory"])
def test_damaged_shard_key_file_restarts_the_shards(damage: str, built: tuple[Path, Path], tiny_llama_dir: Path,
                                                    tmp_path: Path) -> None:
    cfg = gen_config(tmp_path, tiny_llama_dir)
    run = tmp_path / "run"
    shutil.copytree(built[1], run)
    assert main(["generate", cfg, "--out", str(run), "--quiet"]) == 0
    want = pd.read_parquet(run / "generate" / "data.parquet")
    key = run / "generate" / "shards" / "key.txt"
    key.unlink()
    if damage == "binary":
        key.write_bytes(bytes(range(256)))
    else:
        key.mkdir()
    (run / "generate" / "manifest.json").unlink()
    assert main(["generate", cfg, "--out", str(run), "--quiet"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(run / "generate" / "data.parquet"), want)
