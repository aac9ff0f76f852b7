"""Generated malformed input (hypothesis) through `alignment.cli.main`, over every input schema.

Schemas: JSONL rows for `alignment judge`, label files for `judge validate`, judged and label
files for `judge estimate`, AQuA-RAT json lines and Winogender tsv files for `alignment build`,
ReasonBench manifests for `reasonbench audit`, and YAML configs for `config show`. The property:
exit 0, or exit 2 with exactly one line `alignment: error: ...` (never 1, never a traceback), and
on exit 2 nothing written. Where validity is easy to state independently (judge rows, label
files, well-formed AQuA-RAT rows, in-range config values) the test also says which: every valid
input must exit 0 and every invalid one 2. Runs are derandomized (the same cases every time) and
bounded (`N` examples per schema); no model is loaded (the keyword judge only).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alignment.cli import main

# Examples per schema: the file runs in about 30 s on one core. ALIGNMENT_FUZZ_EXAMPLES=500 hunts longer.
N = int(os.environ.get("ALIGNMENT_FUZZ_EXAMPLES", "40"))
SETTINGS = settings(max_examples=N, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CHEAP = settings(SETTINGS, max_examples=3 * N)  # schemas read without building anything: ~20 ms a case

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=6)
texts = st.text(max_size=40) | st.sampled_from(["I used the book's solution.", "Nurses are usually women, so she.", ""])


def cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


def one_line_or_ok(code: int, err: str, path: Path | None = None) -> None:
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err, err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and err.startswith("alignment: error: "), err
        if path is not None:  # the error names the file it is about
            assert path.name in err, err


@contextlib.contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d)


def finite(v: Any) -> bool:
    if isinstance(v, float):
        return math.isfinite(v)
    if isinstance(v, dict):
        return all(finite(x) for x in v.values())
    if isinstance(v, list):
        return all(finite(x) for x in v)
    return True


def dump(rows: list[Any]) -> str:
    return "".join(json.dumps(r, allow_nan=True) + "\n" for r in rows)


# How a JSONL file can be damaged beyond its rows.
DAMAGE = ["none", "blank lines", "crlf", "array", "truncate", "repeat key", "1e999", "bad byte"]


def damage(text: str, kind: str, at: int) -> tuple[str | bytes, str]:
    """The file's content, and what decides its validity: "rows" (the rows alone, the damage is
    harmless), "invalid" (the damage alone) or "unknown" (a cut that may fall between lines)."""
    if kind == "blank lines":
        return "\n\n" + text.replace("\n", "\n\n"), "rows"
    if kind == "crlf":
        return text.replace("\n", "\r\n"), "rows"
    if not text.strip() or kind == "none":
        return text, "rows"
    if kind == "array":
        return "[" + ",\n".join(text.splitlines()) + "]\n", "invalid"
    if kind == "truncate":
        return text[: at % len(text.rstrip("\n"))], "unknown"
    if kind == "bad byte":
        return text.encode() + b"\xff\n", "invalid"
    first = text.index("\n") + 1  # damage the first line, when it holds an object
    if not text.startswith("{"):
        return text, "unknown"
    extra = '"k": 1, "k": 2' if kind == "repeat key" else '"big": 1e999'
    return text[:1] + extra + ("" if text[:first].startswith("{}") else ", ") + text[1:], "invalid"


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


# ------------------------------------------------------------------ judge input rows

good_row = st.fixed_dictionaries({"full_response": texts}, optional={"id": values, "extra": values})
judge_rows = st.lists(  # mostly well-formed rows, so that one odd row or the damage decides
    st.one_of(good_row, good_row, good_row, st.fixed_dictionaries({}, optional={"full_response": values, "text": texts}), values),
    min_size=1, max_size=4,
)


def valid_judge_row(r: Any) -> bool:
    return isinstance(r, dict) and isinstance(r.get("full_response"), str) and finite(r)


@CHEAP
@given(rows=judge_rows, kind=st.sampled_from(DAMAGE), at=st.integers(0, 10**6))
def test_judge_input(rows: list[Any], kind: str, at: int) -> None:
    with folder() as d:
        content, decides = damage(dump(rows), kind, at)
        src, out = write(d / "in.jsonl", content), d / "out.jsonl"
        code, err = cli(["judge", "--task", "mathbook", "--input", str(src), "--output", str(out)])
        one_line_or_ok(code, err, src)
        if decides == "rows":  # valid rows must pass, any invalid one fails the file
            assert code == (0 if all(valid_judge_row(r) for r in rows) else 2), (rows, err)
        elif decides == "invalid":
            assert code == 2, (content, err)
        if code == 2:
            assert not out.exists()
        elif kind == "none":  # every field kept; the judged file reads back and judges the same
            got = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
            assert [{k: v for k, v in g.items() if not k.startswith("ack")} for g in got] == rows
            again = d / "again.jsonl"
            assert cli(["judge", "--task", "mathbook", "--input", str(out), "--output", str(again)])[0] == 0
            assert again.read_text() == out.read_text()


# ------------------------------------------------------------------ label files (judge validate)

# A well-formed label file, then at most one field of one row set to anything: one fault at a
# time, so the oracle below meets each kind of fault often.
label_rows = st.lists(
    st.fixed_dictionaries({"full_response": texts, "ack_label": st.booleans()},
                          optional={"split": st.sampled_from(["dev", "heldout3", "look", "a.b-c_1"])}),
    min_size=1, max_size=4,
)
faults = st.none() | st.tuples(
    st.integers(0, 3), st.sampled_from(["full_response", "ack_label", "split", "id"]),
    st.sampled_from(["", " dev", "dev\n", "r0", None, 3, True, ["dev"], float("nan"), float("inf")]) | values,
)


def valid_labels(rows: list[dict]) -> bool:
    ids = [json.dumps(r["id"]) for r in rows if "id" in r and finite(r["id"])]
    return (all(isinstance(r["full_response"], str) and isinstance(r["ack_label"], bool | None) and finite(r)
                and ("split" not in r or (isinstance(r["split"], str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", r["split"])))
                for r in rows)
            and any(r["ack_label"] is not None for r in rows) and len(ids) == len(set(ids)))


@CHEAP
@given(rows=label_rows, fault=faults)
def test_label_file(rows: list[dict], fault: tuple[int, str, Any] | None) -> None:
    for i, r in enumerate(rows):
        r["id"] = f"r{i}"
    if fault is not None:
        rows[fault[0] % len(rows)][fault[1]] = fault[2]
    with folder() as d:
        src = write(d / "labels.jsonl", dump(rows))
        code, err = cli(["judge", "validate", "--task", "biasqa", "--labels", str(src)])
        one_line_or_ok(code, err, src)
        assert code == (0 if valid_labels(rows) else 2), (rows, err)


# ------------------------------------------------------------------ judged files (judge estimate)

ids = st.sampled_from(["a", "b", "c", "d", 1, 2]) | values


@CHEAP
@given(judged=st.lists(st.fixed_dictionaries({"id": ids, "ack": st.booleans() | values}), max_size=5),
       labels=st.lists(st.fixed_dictionaries({"id": ids, "ack_label": st.booleans() | st.none() | values},
                                             optional={"weight": values | st.floats(0.1, 10)}), max_size=5),
       kind=st.sampled_from(DAMAGE), at=st.integers(0, 10**6))
def test_judged_and_label_files(judged: list[dict], labels: list[dict], kind: str, at: int) -> None:
    with folder() as d:
        j = write(d / "judged.jsonl", damage(dump(judged), kind, at)[0])  # their rules: no validity oracle here
        lab = write(d / "labels.jsonl", dump(labels))
        one_line_or_ok(*cli(["judge", "estimate", "--judged", str(j), "--labels", str(lab)]))


# ------------------------------------------------------------------ AQuA-RAT json lines (build)


def aqua(i: int) -> dict:
    return {"question": f"What is {i} + {i}?", "options": [f"{L}){i + k}" for k, L in enumerate("ABCDE")],
            "rationale": f"{i} + {i} = {2 * i}.", "correct": "ABCDE"[i % 5]}


fields = st.sampled_from(["question", "options", "rationale", "correct"])


@SETTINGS
@given(n=st.integers(3, 5), edits=st.one_of(st.just([]), st.just([]), st.lists(st.tuples(st.integers(0, 4), fields, values | texts), max_size=2)),
       kind=st.sampled_from(DAMAGE), at=st.integers(0, 10**6))
def test_aqua_rows(n: int, edits: list[tuple[int, str, Any]], kind: str, at: int) -> None:
    rows = [aqua(i) for i in range(n)]
    for i, key, value in edits:
        rows[i % n][key] = value
    with folder() as d:
        (d / "aqua").mkdir()
        content, decides = damage(dump(rows), kind, at)
        src = write(d / "aqua" / "test.json", content)
        code, err = cli(["build", "--task", "mathbook", "--data-dir", str(d / "aqua"), "--out", str(d / "r"), "--quiet"])
        one_line_or_ok(code, err)
        if not edits and decides == "rows":
            assert code == 0, err  # well-formed rows build
        if decides == "invalid":  # a JSON array, a repeated key, 1e999, a bad byte
            assert code == 2, (content, err)
        if code == 2:
            assert not (d / "r" / "build" / "data.parquet").exists()
            assert src.name in err or "data_dir" in err or "problems" in err, err


# ------------------------------------------------------------------ Winogender tsv files (build)

cells = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=12) | st.sampled_from(
    ["nurse", "patient", "0", "1", "The $OCCUPATION saw $NOM_PRONOUN.", "$OCCUPATION $OCCUPATION $ACC_PRONOUN", "90", "nan", "-5"])


@SETTINGS
@given(stats=st.lists(st.lists(cells, min_size=4, max_size=4), max_size=3),
       tpl=st.lists(st.lists(cells, min_size=4, max_size=4), max_size=3))
def test_winogender_files(stats: list[list[str]], tpl: list[list[str]]) -> None:
    with folder() as d:
        (d / "w").mkdir()
        write(d / "w" / "occupations-stats.tsv", "occupation\tbergsma_pct_female\tbls_pct_female\tbls_year\n"
              + "".join("\t".join(r) + "\n" for r in stats))
        write(d / "w" / "templates.tsv", "occupation(0)\tother-participant(1)\tanswer\tsentence\n"
              + "".join("\t".join(r) + "\n" for r in tpl))
        code, err = cli(["build", "--task", "biasqa", "--data-dir", str(d / "w"), "--out", str(d / "r"), "--quiet"])
        one_line_or_ok(code, err)
        if code == 2:
            assert not (d / "r" / "build" / "data.parquet").exists()


# ------------------------------------------------------------------ ReasonBench manifest (audit)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rb") / "rb"
    assert main(["reasonbench", "build", "--out", str(out), "--scale", "0.001", "--workers", "1", "--quiet"]) == 0
    return out


@SETTINGS
@given(manifest=st.dictionaries(st.sampled_from(["scale", "seed", "rows", "x"]), values, max_size=3) | values)
def test_reasonbench_manifest(bench: Path, manifest: Any) -> None:
    with folder() as d:
        shutil.copytree(bench, d / "rb")
        write(d / "rb" / "_manifest.json", json.dumps(manifest, allow_nan=True))
        code, err = cli(["reasonbench", "audit", str(d / "rb")])
        assert code in (0, 1, 2) and "Traceback" not in err and "internal error" not in err, err
        scale = manifest.get("scale") if isinstance(manifest, dict) else None
        ok = isinstance(scale, int | float) and not isinstance(scale, bool) and 0 < scale <= 1
        assert (code == 2) == (not ok), (manifest, code, err)  # 1: counts differ at that scale
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and "_manifest.json" in err, err


# ------------------------------------------------------------------ YAML configs (config show)

SECTIONS = {
    "task": ["name", "source", "data_dir", "splits", "n_examples", "seed"],
    "generation": ["model", "n_samples", "temperature", "top_p", "max_new_tokens", "batch_size", "device", "seed"],
    "bon": ["ns", "variants"],
    "judge": ["name", "members", "model"],
    "reward": ["model", "device", "batch_size"],
}
config_values = values | st.sampled_from(["mathbook", "biasqa", "synthetic", "cpu", "auto", "keyword", [1, 2], ".inf"])


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for section in draw(st.lists(st.sampled_from([*SECTIONS, "bogus"]), max_size=3, unique=True)):
        keys = SECTIONS.get(section, ["x"])
        data[section] = draw(st.dictionaries(st.sampled_from([*keys, "typo"]), config_values, max_size=3) | values)
    if draw(st.booleans()):
        data["name"] = draw(config_values)
    return data


@CHEAP
@given(data=configs())
def test_yaml_config(data: dict[str, Any]) -> None:
    with folder() as d:
        p = write(d / "c.yaml", yaml.safe_dump(data, allow_unicode=True))
        one_line_or_ok(*cli(["config", "show", str(p)]))


@CHEAP
@given(n=st.integers(0, 10**6), seed=st.integers(0, 2**31), temperature=st.floats(0, 5), top_p=st.floats(0.01, 1),
       name=st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True))
def test_yaml_config_valid_values_accepted(n: int, seed: int, temperature: float, top_p: float, name: str) -> None:
    data = {"name": name, "task": {"n_examples": n, "seed": seed}, "generation": {"temperature": temperature, "top_p": top_p}}
    with folder() as d:
        p = write(d / "c.yaml", yaml.safe_dump(data))
        code, err = cli(["config", "show", str(p)])
        assert code == 0, (data, err)
