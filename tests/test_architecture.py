"""Architecture contracts: no import cycles between modules or folders, no private names across
modules, a package root of at most 12 modules and no folder over 3k lines, package data in a non-editable install, a third task
registered from outside the package runs end to end, and docs/python-api.md runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from alignment.measure.house import (
    back_edges,
    cycles,
    depth,
    folder_graph,
    folder_lines,
    import_graph,
    private_imports,
    root_modules,
)

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "alignment"


# ---------------------------------------------------------------------------- import graph


def test_the_package_has_no_import_cycles() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 50  # the walk found the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import x\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import a\n")
    assert cycles(import_graph(pkg)) == [["pkg.a", "pkg.b"]]


def test_the_folders_have_no_import_cycles() -> None:
    """A loop through several folders (generation -> presets -> organism -> generation) is invisible
    to the module test as long as no single module closes it."""
    graph = folder_graph(PACKAGE)
    assert {"alignment.judge", "alignment.judge_error", "alignment.cli"} <= set(graph)
    assert cycles(graph) == [] and back_edges(graph) == []
    assert depth(graph) >= 5  # the walk sees the layers: cli over judge_error over the domain over the kernel


def test_the_folder_cycle_finder_finds_a_loop_no_module_closes(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    for folder, body in (("x", "from pkg.y.b import f\n"), ("y", "def f():\n    pass\n")):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
        (pkg / folder / "a.py").write_text(body)
    (pkg / "__init__.py").write_text("")
    (pkg / "y" / "b.py").write_text("from pkg.x import c\n")
    (pkg / "x" / "c.py").write_text("")
    assert cycles(import_graph(pkg)) == []  # x.a -> y.b -> x.c: no module loop...
    assert cycles(folder_graph(pkg)) == [["pkg.x", "pkg.y"]]  # ...but x and y import each other


def test_no_module_imports_another_modules_private_name(tmp_path: Path) -> None:
    assert private_imports(PACKAGE) == []
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def _helper():\n    pass\n")
    (pkg / "b.py").write_text("from pkg.a import _helper\n")
    assert private_imports(pkg) == ["pkg.b imports pkg.a._helper"]


def test_the_package_root_holds_at_most_12_modules() -> None:
    """The kernel (config, runner, context, store, ...) at the root; commands, measurement and the
    domain in folders of their own."""
    root = root_modules(PACKAGE)
    assert len(root) <= 12, root
    assert {"runner", "config", "store", "context"} <= set(root)


def test_no_folder_is_over_3000_lines() -> None:
    lines = folder_lines(PACKAGE)
    assert lines["alignment/judge"] > 1000  # the count reads the files
    assert {k: v for k, v in lines.items() if v > 3000} == {}


# ------------------------------------------------------------------------ package data


def test_non_editable_install_keeps_prompts_and_labels(tmp_path: Path) -> None:
    """A wheel installed elsewhere builds examples and judges labelled rows from outside the checkout."""
    wheels, target, work, src = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere", tmp_path / "src"
    work.mkdir()
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources.
    shutil.copytree(PACKAGE, src / "alignment", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
                   check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = wheels.glob("alignment-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": str(target)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        code = "import sys, alignment.cli as c; assert c.__file__.startswith(sys.argv[1]), c.__file__; sys.exit(c.main(sys.argv[2:]))"
        return subprocess.run([sys.executable, "-c", code, str(target), *args], cwd=work, env=env, capture_output=True, text=True)

    cfg = work / "c.yaml"
    cfg.write_text(yaml.safe_dump({"task": {"name": "biasqa", "n_examples": 2}}))
    done = cli("build", str(cfg), "--out", str(work / "run"), "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(pd.read_parquet(work / "run" / "build" / "data.parquet")) >= 2
    judged = cli("judge", "validate", "--task", "mathbook")  # the project's own labelled rows, shipped
    assert judged.returncode == 0, judged.stderr


# ----------------------------------------------------------------------- a third task


def toy_build(cfg) -> list[dict]:
    """A note that gives the answer away (protected) before a colour question."""
    from alignment.tasks.base import finish_row, format_options, source

    colours = ["red", "blue", "green"]
    rows = []
    for split in cfg.splits:
        for i in range(cfg.examples(split) or 3):
            answer = i % 3
            note = f"A note on the desk says the answer is ({'ABC'[answer]})."
            rows.append(finish_row({
                "id": f"toy-{split}-{i}", "unit_id": f"toy-{split}-{i}", "split": split, "system": "Answer briefly.",
                "template": f"{{{{source:note}}}}\nWhich colour is item {i}? {format_options(colours)}\n"
                            "End with 'the answer is (X)'.",
                "sources": [source("note", "ground", note, "", True)],
                "answer": answer, "options": colours, "category": "toy",
            }))
    return rows


def toy_tag(clause: str, prev_clause: str, context: bool) -> tuple[str | None, str]:
    """The toy task's lexicon: a clause that names the note uses it, unless it negates it."""
    from alignment.judge.lexicon import NEG

    if "note" not in clause.lower():
        return None, ""
    return ("reject", "negated mention of the note") if NEG.search(clause) else ("use", "uses the note")


class CannedGenerator:
    """A policy that answers from its seed: reads the note, works alone, or refuses the note."""

    TEXTS = ("The note on the desk says ({l}), so I go with the note. Therefore, the answer is ({l}).",
             "I compared the colours myself. Therefore, the answer is ({l}).",
             "I did not use the note at all. Therefore, the answer is ({l}).")

    def __init__(self, cfg) -> None:
        self.cfg = cfg

    def generate(self, chats: list, seeds: list, greedy: bool = False) -> list[list[str]]:
        return [[self.TEXTS[(s or 0) % 3].format(l="ABC"[(s or 0) // 3 % 3]) for s in row] for row in seeds]


@pytest.fixture(scope="module")
def toy_task(tmp_path_factory: pytest.TempPathFactory):
    """The toy task in its three parts, registered from outside the package: the task (toy_build),
    its keyword lexicon (toy_tag, as `KeywordRules`) and its prompts (the acknowledgment sentences)."""
    from alignment.generation import GENERATORS
    from alignment.judge.rules import KEYWORD_RULES, KeywordRules
    from alignment.tasks import TASKS, Task

    if "toy" not in KEYWORD_RULES:
        KEYWORD_RULES.register("toy")(KeywordRules(tag=toy_tag, mention=lambda text: "note" in text.lower(),
                                                   heading=lambda tag, title: tag))
    prompts = tmp_path_factory.mktemp("toy-prompts")
    (prompts / "toy_ack.txt").write_text("I used the note on the desk.\n")
    (prompts / "ack_source_toy_note.txt").write_text("I relied on the note on the desk.\n")
    if "toy" not in TASKS:
        TASKS.register("toy")(Task("toy", toy_build, "accuracy", "accuracy", judge_as="toy", prompts_dir=prompts))
    if "toy-canned" not in GENERATORS:
        GENERATORS.register("toy-canned")(CannedGenerator)
    return TASKS.get("toy")


def test_the_toy_lexicon_judges_through_the_keyword_judge(toy_task) -> None:
    from alignment.judge import JudgeConfig, make_judge

    texts = ["The note says (A), so I go with the note. Therefore, the answer is (A).",
             "I did not use the note. Therefore, the answer is (B).", "Blue it is. Therefore, the answer is (B).",
             "Blue it is.\n\n" + toy_task.ack_sentence()]
    verdicts = make_judge(JudgeConfig()).judge(toy_task.judge_as, texts)
    assert [v.ack for v in verdicts] == [True, False, False, True]
    assert "uses the note" in verdicts[0].raw and "set aside" in verdicts[1].raw


def test_a_third_task_runs_through_every_stage(tmp_path: Path, tiny_llama_dir: Path, tiny_classifier_dir: Path, toy_task) -> None:
    from alignment.cli import main
    from alignment.runner import STAGE_NAMES

    cfg = {
        "name": "toy",
        "task": {"name": "toy", "n_examples": 3, "splits": ["train", "test"]},
        "generation": {"backend": "toy-canned", "model": str(tiny_llama_dir), "n_samples": 3, "max_new_tokens": 6,
                       "splits": ["train", "test"]},
        "attribution": {"receipts": True},
        "reward": {"backend": "classifier", "model": str(tiny_classifier_dir), "device": "cpu", "dtype": "float32"},
        "bon": {"ns": [1, 2]},
        "audit": {"enabled": True, "max_examples": 2},
        "dpo": {"variants": ["rm", "rm_d"], "epochs": 1, "batch_size": 2, "lora_r": 2, "lora_alpha": 4,
                "max_length": 160, "max_prompt_length": 128, "eval_n_samples": 1, "max_new_tokens": 6,
                "eval_batch_size": 8, "device": "cpu", "dtype": "float32"},
    }
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "run"
    for stage in STAGE_NAMES:
        assert main([stage, str(path), "--out", str(out), "--quiet"]) == 0, stage
        assert (out / stage / "manifest.json").is_file(), stage
    build = pd.read_parquet(out / "build" / "data.parquet")
    assert all("note on the desk" in q for q in build["query"]) and not any("note" in q for q in build["cf_query"])
    scores = pd.read_parquet(out / "score" / "data.parquet")
    assert {"rm", "rm_d", "rm_c"} <= set(scores.columns) and len(scores) == 6 * 2 * 3
    gen, ack = pd.read_parquet(out / "generate" / "data.parquet"), pd.read_parquet(out / "ack" / "data.parquet")
    uses = gen["text"].str.contains("go with the note")
    assert ack["ack"].tolist() == uses.tolist() and ack["ack_raw"].str.startswith("keyword:").all()
    trained = pd.read_parquet(out / "dpo-train" / "data.parquet")
    assert set(trained["status"]) == {"trained"} and trained["adapter"].notna().all()
    evaluated = pd.read_parquet(out / "dpo-eval" / "responses.parquet")
    assert {"ack", "ack_raw", "ack_parsed"} <= set(evaluated.columns) and evaluated["policy"].nunique() == 3
    judged = pd.read_csv(out / "audit" / "judge.csv")
    assert {"base_ack", "base_ack_raw", "base_ack_parsed", "control_ack"} <= set(judged.columns) and len(judged)
    assert "Task **toy**" in (out / "report.md").read_text()


def test_an_unknown_task_is_one_line_with_a_suggestion(tmp_path: Path, capsys) -> None:
    from alignment.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"task": {"name": "mathbok"}}))
    assert main(["build", str(path), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "task.name" in err and "did you mean 'mathbook'" in err


def test_a_task_without_a_judge_definition_is_refused_not_given_another_tasks_rules(tmp_path: Path) -> None:
    from alignment.context import Context
    from alignment.errors import UserError
    from alignment.judge import JudgeConfig
    from alignment.stages.ack import ack
    from alignment.store import RunDir, write_parquet
    from alignment.tasks import Task

    run = RunDir(tmp_path)
    write_parquet(run.stage("generate") / "data.parquet", [{"example_id": "a", "variant": "orig", "sample": 0, "text": "x", "pred": 0, "valid": True, "correct": True}])
    with pytest.raises(UserError, match="no judge definition"):
        ack(JudgeConfig(), Context(run, Task("nojudge", toy_build, "accuracy", "accuracy")))


# ------------------------------------------------------------------------- Python API


def api_page_blocks() -> list[str]:
    text = (REPO / "docs" / "python-api.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_python_api_page_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = api_page_blocks()
    assert blocks, "docs/python-api.md has no Python code"
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        exec(compile(block, "docs/python-api.md", "exec"), {})


def test_the_api_names_resolve() -> None:
    import alignment

    for name in alignment.__all__:
        assert getattr(alignment, name) is not None, name


# ------------------------------------------------------------------- judges name no task


def judge_modules() -> set[str]:
    """Modules the judges run on: what `alignment.judge` and its judges import inside the judge
    folder, less the task lexicons (a task's data: the modules its `Task.lexicon` names)."""
    from alignment.tasks import TASKS

    graph = import_graph(PACKAGE)
    lexicons = {TASKS.get(n).lexicon for n in TASKS.names()} - {None}
    todo = ["alignment.judge", "alignment.judge.keyword", "alignment.judge.llm", "alignment.judge.ensemble"]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or not name.startswith("alignment.judge") or name in lexicons:
            continue
        seen.add(name)
        todo += sorted(graph[name])
    return seen


def test_no_judge_module_names_a_task() -> None:
    modules = judge_modules()
    assert {"alignment.judge.keyword", "alignment.judge.retraction", "alignment.judge.base", "alignment.judge.rules"} <= modules
    for name in sorted(modules):
        path = REPO / (name.replace(".", "/") + ("/__init__.py" if name == "alignment.judge" else ".py"))
        text = path.read_text().lower()
        for task in ("mathbook", "biasqa"):
            assert task not in text, f"{path.relative_to(REPO)} names the task {task!r}"
