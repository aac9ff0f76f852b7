"""Bad input: each kind gets one line naming file, line/row and field, exit 2,
and leaves nothing written; what is valid next to it still goes through.

Kinds: repeated template rows, a JSON array where JSON lines are expected, a template whose
protected slot is missing or doubled, a flag and a `--set` (or a run's config) naming the same
field, non-finite numbers and non-string texts in JSONL, a label file's `split` of the wrong kind,
a ReasonBench file with a wrong type or a non-JSON cell, and a progress bar left open before an
error. `tests/test_malformed_properties.py` generates many more inputs of these shapes.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment.cli import main

TSV_HEAD = "occupation(0)\tother-participant(1)\tanswer\tsentence\n"
STATS = "occupation\tbergsma_pct_female\tbls_pct_female\tbls_year\nnurse\t90\t90.0\t2015\n"
GOOD = "nurse\tpatient\t0\tThe $OCCUPATION helped the $PARTICIPANT because $NOM_PRONOUN was kind.\n"


def aqua_row(i: int, **kw: object) -> dict:
    return {"question": f"What is {i} + {i}?", "options": [f"{L}){i + k}" for k, L in enumerate("ABCDE")],
            "rationale": f"{i} + {i} = {2 * i}.", "correct": "A", **kw}


def aqua(tmp: Path, text: str) -> str:
    d = tmp / "aqua"
    d.mkdir(exist_ok=True)
    (d / "test.json").write_text(text)
    return str(d)


def lines(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def wino(tmp: Path, templates: str) -> str:
    d = tmp / "wino"
    d.mkdir(exist_ok=True)
    (d / "occupations-stats.tsv").write_text(STATS)
    (d / "templates.tsv").write_text(TSV_HEAD + templates)
    return str(d)


def build(data_dir: str, tmp: Path, task: str = "biasqa") -> list[str]:
    return ["build", "--task", task, "--data-dir", data_dir, "--out", str(tmp / "r"), "--quiet"]


def judge(tmp: Path, text: str) -> list[str]:
    (tmp / "in.jsonl").write_text(text)
    return ["judge", "--task", "mathbook", "--input", str(tmp / "in.jsonl"), "--output", str(tmp / "o.jsonl")]


def validate(tmp: Path, rows: list[dict]) -> list[str]:
    (tmp / "labels.jsonl").write_text(lines(rows))
    return ["judge", "validate", "--task", "mathbook", "--labels", str(tmp / "labels.jsonl")]


def label(split: object) -> list[dict]:
    return [{"id": "a", "full_response": "I solved it.", "ack_label": False, "split": split}]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    code = main(argv)
    return code, capsys.readouterr().err


def written(tmp: Path) -> list[str]:
    """What a failed command left behind: stage outputs and judge outputs, not its inputs."""
    return sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*")
                  if p.name in ("o.jsonl", "data.parquet", "manifest.json", "sweep.csv", "sample.jsonl"))


# Each case: (argv builder, words the one line must hold: the file, the line or row, the field).
Case = tuple[Callable[[Path], list[str]], tuple[str, ...]]
CASES: dict[str, Case] = {
    # ---- repeated rows, JSON arrays, protected slots missing or doubled
    "wino repeated template row": (lambda t: build(wino(t, GOOD + GOOD), t), ("templates.tsv row 3", "repeats row 2")),
    "wino occupation slot doubled": (lambda t: build(wino(t, "nurse\tpatient\t0\tThe $OCCUPATION and the $OCCUPATION said $NOM_PRONOUN.\n"), t),
                                     ("templates.tsv row 2", "'sentence'", "$OCCUPATION", "found 2")),
    "wino pronoun slot doubled": (lambda t: build(wino(t, "nurse\tpatient\t0\tThe $OCCUPATION said $NOM_PRONOUN and $NOM_PRONOUN.\n"), t),
                                  ("templates.tsv row 2", "'sentence'", "pronoun slot", "found 2")),
    "wino templates header only": (lambda t: build(wino(t, ""), t), ("templates.tsv", "no rows below the header")),
    "aqua JSON array over lines": (lambda t: build(aqua(t, json.dumps([aqua_row(i) for i in range(4)], indent=1)), t, "mathbook"),
                                   ("test.json line 1", "JSON array")),
    "aqua JSON array on one line": (lambda t: build(aqua(t, json.dumps([aqua_row(i) for i in range(4)]) + "\n"), t, "mathbook"),
                                    ("test.json line 1", "JSON array")),
    "aqua repeated key": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(3)]) + '{"question": "a", "question": "b"}\n'), t, "mathbook"),
                          ("test.json line 4", "'question'", "twice")),
    "judge input JSON array": (lambda t: judge(t, '[{"full_response": "x"},\n {"full_response": "y"}]\n'), ("in.jsonl line 1", "JSON array")),
    # ---- non-finite numbers and non-string texts
    "judge input 1e999": (lambda t: judge(t, '{"full_response": "x", "score": 1e999}\n'), ("in.jsonl line 1", "'score'", "1e999")),
    "judge input nested NaN": (lambda t: judge(t, '{"full_response": "x"}\n{"full_response": "y", "m": {"p": [1, NaN]}}\n'),
                               ("in.jsonl line 2", "'m'.'p'[1]", "NaN")),
    "judge input response null": (lambda t: judge(t, '{"full_response": null}\n'), ("in.jsonl line 1", "'full_response'", "null")),
    "judge input response list": (lambda t: judge(t, '{"full_response": ["a"]}\n'), ("in.jsonl line 1", "'full_response'", "list")),
    "aqua question NaN": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(3)]) + '{"question": NaN, "options": [], "rationale": "r", "correct": "A"}\n'), t, "mathbook"),
                          ("test.json line 4", "'question'", "NaN")),
    "aqua question a number": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(3)] + [aqua_row(9, question=12)])), t, "mathbook"),
                               ("test.json line 4", "'question'", "string")),
    "aqua option a number": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(3)] + [aqua_row(9, options=[1, 2, 3, 4, 5])])), t, "mathbook"),
                             ("test.json line 4", "option 1")),
    "aqua rationale a list": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(3)] + [aqua_row(9, rationale=["a"])])), t, "mathbook"),
                              ("test.json line 4", "'rationale'", "string")),
    "labels response null": (lambda t: validate(t, [{"full_response": None, "ack_label": True}]), ("labels.jsonl line 1", "'full_response'")),
    "labels weight Infinity": (lambda t: judge(t, '{"full_response": "x", "weight": -Infinity}\n'), ("line 1", "'weight'", "-Infinity")),
    # ---- label files: the split field, repeated ids
    "labels split a number": (lambda t: validate(t, label(3)), ("labels.jsonl line 1", "'split'", "3")),
    "labels split null": (lambda t: validate(t, label(None)), ("labels.jsonl line 1", "'split'", "None")),
    "labels split empty": (lambda t: validate(t, label("")), ("labels.jsonl line 1", "'split'")),
    "labels split padded": (lambda t: validate(t, label(" dev")), ("labels.jsonl line 1", "'split'", "' dev'")),
    "labels split a list": (lambda t: validate(t, label(["dev"])), ("labels.jsonl line 1", "'split'")),
    "labels id repeated": (lambda t: validate(t, label("dev") + label("dev")), ("labels.jsonl line 2", "'a'", "twice")),
    # ---- a flag and a --set (or the run's own config) naming the same field
    "build --n and --set task.n_examples": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(4)])), t, "mathbook")
                                            + ["--n", "2", "--set", "task.n_examples=3"], ("--n", "task.n_examples")),
    "build --task and --set task": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(4)])), t, "mathbook")
                                    + ["--set", "task={name: biasqa}"], ("--task", "task.name")),
    "build --data-dir and --set task.source": (lambda t: build(aqua(t, lines([aqua_row(i) for i in range(4)])), t, "mathbook")
                                               + ["--set", "task.source=hub"], ("--data-dir", "task.source")),
    "sweep --seeds and --set task.seed": (lambda t: ["sweep", cfg(t), "--out", str(t / "s"), "--set", "task.seed=7"],
                                          ("--set task.seed", "--seeds")),
    "sweep --seeds and --set generation": (lambda t: ["sweep", cfg(t), "--out", str(t / "s"), "--set", "generation={seed: 7}"],
                                           ("--set generation", "--seeds")),
}


def cfg(tmp: Path) -> str:
    p = tmp / "c.yaml"
    p.write_text(yaml.safe_dump({"task": {"name": "mathbook", "source": "synthetic", "n_examples": 1}}))
    return str(p)


def assert_one_line(code: int, err: str, words: tuple[str, ...]) -> None:
    assert code == 2, (code, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("alignment: error: "), err
    for w in words:
        assert w in err, (w, err)


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_and_writes_nothing(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv, words = CASES[name]
    assert_one_line(*run(argv(tmp_path), capsys), words)
    assert written(tmp_path) == []


# ------------------------------------------------------------------ protected slots in templates


@pytest.mark.parametrize("task, slot, source, count", [("mathbook", "{{solutions}}", "book_solution", 0),
                                                        ("mathbook", "{{solutions}}", "book_solution", 2),
                                                        ("biasqa", "{{sentence}}", "occupation", 0),
                                                        ("biasqa", "{{sentence}}", "occupation", 2)])
def test_template_protected_slot_missing_or_doubled(task: str, slot: str, source: str, count: int, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """An edited prompt file that drops or repeats the slot holding the protected source: the
    counterfactual would equal the original, or change the feature in two places."""
    import alignment.tasks.base as base

    prompts = tmp_path / "prompts"
    shutil.copytree(base.PROMPTS_DIR, prompts)
    query = prompts / f"{task}_query.txt"
    query.write_text(query.read_text().replace(slot, "\n".join([slot] * count)))
    monkeypatch.setattr(base, "PROMPTS_DIR", prompts)
    data = aqua(tmp_path, lines([aqua_row(i) for i in range(4)])) if task == "mathbook" else wino(tmp_path, GOOD)
    code, err = run(build(data, tmp_path, task), capsys)
    assert_one_line(code, err, (f"protected source slot {{{{source:{source}}}}}", f"{count} times", str(query)))
    assert written(tmp_path) == []


# ------------------------------------------------------------------ what stays valid


def test_valid_neighbours_still_build_and_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two templates differing only in the answer, large finite numbers, a BiasQA build with
    every slot once, CONFIG's splits kept when --data-dir is given, the project's label files."""
    two = "nurse\tpatient\t1\tThe $OCCUPATION helped the $PARTICIPANT because $NOM_PRONOUN was kind.\n"
    assert main(build(wino(tmp_path, GOOD + two), tmp_path) + ["--splits", "train", "test"]) == 0
    assert len(pd.read_parquet(tmp_path / "r" / "build" / "data.parquet")) == 2
    assert main(judge(tmp_path, '{"full_response": "x", "big": 1e308, "n": -0.0, "s": "NaN"}\n')) == 0
    assert json.loads((tmp_path / "o.jsonl").read_text())["big"] == 1e308
    (tmp_path / "c2.yaml").write_text(yaml.safe_dump({"task": {"name": "mathbook", "splits": ["test"], "n_examples": 2}}))
    d = aqua(tmp_path, lines([aqua_row(i) for i in range(4)]))
    (Path(d) / "dev.json").write_text("not read: CONFIG names only the test split\n")
    assert main(["build", str(tmp_path / "c2.yaml"), "--data-dir", d, "--out", str(tmp_path / "r2"), "--quiet"]) == 0
    assert main(["judge", "validate", "--task", "mathbook", "--json"]) == 0  # splits dev, heldout..heldout15


def test_judge_sample_refuses_a_task_other_than_the_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from alignment.judge_error.sample import task_of

    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"task": {"name": "mathbook"}}))
    assert task_of(tmp_path, None) == task_of(tmp_path, "mathbook") == "mathbook"
    with pytest.raises(Exception, match=r"--task biasqa: the run's .*config.yaml says task.name mathbook"):
        task_of(tmp_path, "biasqa")
    assert task_of(tmp_path / "nowhere", "biasqa") == "biasqa"  # no config: the flag is the only source
    for bad in ("mathbok", 3, None, ["mathbook"]):  # was a KeyError (exit 1) after sample.jsonl was written
        (tmp_path / "config.yaml").write_text(yaml.safe_dump({"task": {"name": bad}}))
        with pytest.raises(Exception, match=r"config.yaml: task.name .* has no labelling definition"):
            task_of(tmp_path, None)


# ------------------------------------------------------------------ ReasonBench audit


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rb") / "rb"
    assert main(["reasonbench", "build", "--out", str(out), "--scale", "0.001", "--workers", "1", "--quiet"]) == 0
    return out


def _set(col: str, value: object, control: bool = False) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def edit(df: pd.DataFrame) -> pd.DataFrame:
        row = int(df.index[df["control_type"].notna()][0]) if control else 0
        df[col] = df[col].astype(object)
        df.at[row, col] = value
        return df
    return edit


def _column(col: str, value: object) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def edit(df: pd.DataFrame) -> pd.DataFrame:
        df[col] = [value] * len(df)
        return df
    return edit


AUDIT: dict[str, tuple[Callable[[pd.DataFrame], pd.DataFrame] | None, str | None, tuple[str, ...]]] = {
    "cube not JSON": (_set("cube", "{not json"), None, ("reasonbench.parquet: row 0", "'cube'", "not JSON")),
    "control's cube not JSON": (_set("cube", "nope", control=True), None, ("reasonbench.parquet: row", "'cube'", "not JSON")),
    "cube a list": (_set("cube", "[1, 2]"), None, ("row 0", "'cube'", "JSON object")),
    "cube without a cell": (_set("cube", '{"": "deny"}'), None, ("row 0", "'cube'", "each of the cells")),
    "context not an object": (_set("context", "[]"), None, ("row 0", "'context'", "JSON object")),
    "prompt column of numbers": (_column("prompt", 5), None, ("row 0", "'prompt'", "text")),
    "receipt column of numbers": (_column("receipt", 1), None, ("row 0", "'receipt'", "list")),
    "ambiguous column of text": (_column("ambiguous", "yes"), None, ("row 0", "'ambiguous'")),
    "source_order not an order": (_set("source_order", "XYZ"), None, ("row 0", "'source_order'")),
    "manifest scale a list": (None, '{"scale": [1]}', ("_manifest.json", "'scale'")),
    "manifest scale text": (None, '{"scale": "half"}', ("_manifest.json", "'scale'")),
    "manifest scale huge": (None, '{"scale": 1e9}', ("_manifest.json", "'scale'")),
    "manifest a list": (None, "[1]", ("_manifest.json", "JSON object")),
    "manifest not JSON": (None, "scale: 0.001", ("_manifest.json", "not a readable JSON")),
}


@pytest.mark.parametrize("name", list(AUDIT))
def test_audit_damaged_file_is_one_line_exit_2(name: str, bench: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    edit, manifest, words = AUDIT[name]
    d = tmp_path / "rb"
    shutil.copytree(bench, d)
    if edit is not None:
        edit(pd.read_parquet(d / "reasonbench.parquet")).to_parquet(d / "reasonbench.parquet")
    if manifest is not None:
        (d / "_manifest.json").write_text(manifest)
    assert_one_line(*run(["reasonbench", "audit", str(d)], capsys), words)


def test_audit_of_the_intact_benchmark_stays_clean(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reasonbench", "audit", str(bench)]) == 0
    assert "audit: clean" in capsys.readouterr().out


# ------------------------------------------------------------------ progress bar, then an error


@pytest.mark.parametrize("error", ["user", "internal"])
def test_error_after_an_open_progress_bar_starts_its_own_line(error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop left by an exception keeps its bar open (as generation's does when the model
    cannot load): the bar is closed first, so the error is a line of its own."""
    from tqdm.auto import tqdm

    import alignment.cli.pipeline
    from alignment.errors import UserError

    def fails_mid_loop(args: object) -> int:
        bar = tqdm(total=3, desc="generate", file=sys.stderr)
        bar.update(1)
        raise UserError("cannot load the model") if error == "user" else RuntimeError("a bug")

    monkeypatch.setenv("ALIGNMENT_LOG_DIR", str(tmp_path))
    monkeypatch.setattr(alignment.cli.pipeline, "cmd_config", fails_mid_loop)
    code, err = run(["config", "show"], capsys)
    assert code == (2 if error == "user" else 1)
    ours = [line for line in err.split("\n") if "alignment:" in line]
    assert len(ours) == 1 and ours[0].startswith("alignment: "), repr(err)
    assert "generate" in err  # the bar was shown, and ended before the error


# ------------------------------------------------------------------ a run's labels (the report's)


@pytest.mark.parametrize("sample", [1.5, True, "1x", "²", None])
def test_run_label_sample_must_be_an_integer(sample: object, tmp_path: Path) -> None:
    """int() took 1.5 as 1 and true as 1: a label silently moved to another response."""
    from fake_run import fake_run, label_sample

    from alignment.errors import UserError
    from alignment.judge_error.run_labels import check_labels

    run = fake_run(tmp_path / "run")
    rows = label_sample(run, n=3, flip_every=100, unlabelled=0)
    rows[1]["sample"] = sample
    (run.path / "judge_sample" / "sample_labelled.jsonl").write_text(lines(rows))
    with pytest.raises(UserError, match=r"sample_labelled.jsonl line 2: field 'sample' must be an integer"):
        check_labels(run, None)


def test_edited_data_rebuilds(tmp_path: Path) -> None:
    """The build key holds the local data files' content: edited data is rebuilt, not reported up to date."""
    data = aqua(tmp_path, lines([aqua_row(i) for i in range(1, 7)]))
    args = ["build", "--task", "mathbook", "--data-dir", data, "--out", str(tmp_path / "r"), "--quiet"]
    assert main(args) == 0
    first = pd.read_parquet(tmp_path / "r" / "build" / "data.parquet")
    (Path(data) / "test.json").write_text(lines([aqua_row(i) for i in range(11, 17)]))
    assert main(args) == 0
    second = pd.read_parquet(tmp_path / "r" / "build" / "data.parquet")
    assert "What is 11 + 11?" in " ".join(second["query"]) and "What is 11 + 11?" not in " ".join(first["query"])


# ------------------------------------------------------------------ a run dir's own artifacts


@pytest.mark.parametrize("numbers, row, said", [(False, 3, "holds a null"), (True, 1, "holds the number 5")])
def test_a_generate_row_without_text_stops_ack_naming_file_and_row(numbers: bool, row: int, said: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A generator that wrote a null or a number where the response text belongs (its manifest
    vouching for the file): ack stopped deep in the judge with an AttributeError, exit 1."""
    import time

    from fake_run import fake_run

    run = fake_run(tmp_path / "run", n_examples=2, n_samples=2)
    data = run.stage("generate") / "data.parquet"
    resp = pd.read_parquet(data)
    if numbers:  # a whole column of numbers: a backend that returned token ids, say
        resp["text"] = list(range(5, 5 + len(resp)))
    else:
        resp["text"] = resp["text"].astype(object)
        resp.loc[2, "text"] = None
    resp.to_parquet(data)
    run.finish("generate", "any", time.time(), {"responses": len(resp)})
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"task": {"name": "mathbook", "source": "synthetic", "n_examples": 2}}))
    code, err = run_cli(["ack", str(config), "--out", str(run.path), "--quiet"], capsys)
    assert_one_line(code, err, (f"{data} row {row} ", "'text'", said, "rerun the generate stage"))


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    return main(argv), capsys.readouterr().err


def test_a_policy_that_cannot_load_is_one_line_without_a_progress_bar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"task": {"name": "mathbook", "source": "synthetic", "n_examples": 1},
                                      "generation": {"model": str(tmp_path / "no-model-here"), "n_samples": 1}}))
    assert main(["build", str(config), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    code, err = run_cli(["generate", str(config), "--out", str(tmp_path / "r")], capsys)
    assert_one_line(code, err, ("no-model-here",))
    assert "%|" not in err
