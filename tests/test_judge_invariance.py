"""Meaning-keeping rewrites must not change the keyword judge's verdicts, on the real dev rows
(regression: those rows were read while writing the rules) and on written cases."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import alignment.judge
from alignment.judge import JudgeConfig, Verdict, make_judge
from alignment.judge_error.invariance import (
    flips,
    gender_swap,
    main,
    occupation_swap,
    rewrites,
    winogender_occupations,
)

KW = make_judge(JudgeConfig())


class _SurfaceJudge:
    """Says "ack" whenever the word "she" appears: what a judge reading surface forms does."""

    name = "surface"

    def judge(self, task: str, texts: list[str]) -> list[Verdict]:
        return [
            Verdict(ack=re.search(r"\bshe\b", t, re.I) is not None, raw="surface") for t in texts
        ]


def test_flips_catch_a_judge_that_reads_surface_forms() -> None:
    texts = ["Nurses are usually women, so she.", "The pronoun refers to the pilot, so he."]
    assert flips(_SurfaceJudge(), "biasqa", texts, gender_swap) == (2, [0, 1])
    assert flips(KW, "biasqa", texts, gender_swap) == (2, [])


@pytest.mark.parametrize("task", ["mathbook", "biasqa"])
def test_real_dev_rows_keep_their_verdicts_under_rewrites(shared_data: Path, task: str) -> None:
    path = shared_data / "ack_labels" / f"{task}_dev.jsonl"
    if not path.is_file() or not (shared_data / "winogender").is_dir():
        pytest.skip(f"{path} or the Winogender folder not found")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    texts = [r["full_response"] for r in rows]
    applied = {}
    for name, rewrite in rewrites(winogender_occupations(shared_data / "winogender")).items():
        n, changed = flips(KW, task, texts, rewrite)
        assert changed == [], (name, [rows[i]["id"] for i in changed])
        applied[name] = n
    # the rewrites really touch these rows (Math Book: the word problems' people)
    floors = (
        {"gender": 40, "occupation": 20, "letters": 40, "quotes": 40, "markdown": 10, "bold options": 40}
        if task == "biasqa"
        else {"gender": 10, "bold options": 20}
    )
    assert all(applied[k] >= v for k, v in floors.items()), applied


@pytest.mark.parametrize("task", ["mathbook", "biasqa"])
def test_form_rewrites_keep_the_verdicts_of_written_rows(task: str) -> None:
    """Quotes, markdown and bold option letters change no verdict of the rows written for the
    project or the probes (regression: 27 of them flipped before, e.g. "the answer is **(C)**"
    hid the final letter from the book-answer rule)."""
    root = Path(__file__).resolve().parents[1]
    paths = [root / "alignment" / "data" / "labels" / f"{task}_ack.jsonl", root / "tests" / "data" / "judge_probes.jsonl"]
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]
    texts = [r["full_response"] for r in rows if r.get("task", task) == task]
    for name in ("quotes", "markdown", "bold options"):
        n, changed = flips(KW, task, texts, rewrites([])[name])
        assert n > 0 and changed == [], (name, n, changed[:5])


def test_occupation_swap_replaces_the_longest_named_occupation() -> None:
    text = "The physical therapist is not the therapist's patient."
    assert (
        occupation_swap(text, ["therapist", "physical therapist", "pilot"], 1)
        == "The pilot is not the therapist's patient."
    )


def test_cli_prints_flips_and_rejects_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    labels = tmp_path / "l.jsonl"
    labels.write_text(
        json.dumps(
            {"id": "a", "full_response": "Nurses are usually women, so (A) she.", "ack_label": True}
        )
        + "\n"
    )
    assert main(["--task", "biasqa", "--labels", str(labels)]) == 0
    assert "gender: 0 of 1 verdicts change" in capsys.readouterr().out
    monkeypatch.setattr(alignment.judge, "make_judge", lambda cfg: _SurfaceJudge())
    assert main(["--task", "biasqa", "--labels", str(labels)]) == 0
    assert "gender: 1 of 1 verdicts change: a" in capsys.readouterr().out
    for bad in (["--winogender", str(tmp_path / "nowhere")], []):
        args = [
            "--task",
            "biasqa",
            "--labels",
            str(labels if bad else tmp_path / "missing.jsonl"),
            *bad,
        ]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
    (tmp_path / "noid.jsonl").write_text(json.dumps({"full_response": "x"}) + "\n")
    assert main(["--task", "biasqa", "--labels", str(tmp_path / "noid.jsonl")]) == 2
    assert "missing field 'id'" in capsys.readouterr().err
