"""The command line's help: every command, stage and option says what it is; each stage says what
it does and needs first, in the words of the docs' stage table; `--executor` only where it does
something; `judge`'s required options marked required; `judge validate` without labels warns."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from pathlib import Path

import pytest
import yaml

from alignment.cli import build_parser, main
from alignment.cli.config_reference import stage_table
from alignment.executor import SHARDED
from alignment.runner import STAGE_NAMES, stage_needs
from alignment.stages import DOES


def missing_help(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[str]:
    """Every subcommand and option under `parser` whose help is empty, as 'cmd sub: --flag'."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {line.dest: line.help for line in action._choices_actions}
            for name, sub in action.choices.items():
                if not (helps.get(name) or "").strip():
                    found.append(f"{' '.join(path)}: subcommand {name}")
                found += missing_help(sub, (*path, name))
        elif not (action.help or "").strip() and action.help != argparse.SUPPRESS:
            found.append(f"{' '.join(path)}: {'/'.join(action.option_strings) or action.dest}")
    return found


def help_text(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--help"]) == 0
    return " ".join(out.getvalue().split())


def test_every_command_stage_and_option_has_help() -> None:
    assert missing_help(build_parser()) == []


def test_the_help_walk_finds_a_flag_or_subcommand_without_help() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--said", help="something")
    p.add_argument("--bare")
    inner = p.add_subparsers().add_parser("silent")
    inner.add_argument("thing", help=" ")
    assert missing_help(p) == [": --bare", ": subcommand silent", "silent: thing"]


def test_every_help_page_prints() -> None:
    parser = build_parser()
    commands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)][0].choices
    for name, sub in commands.items():
        assert help_text(name).startswith(f"usage: alignment {name}")
        for inner in [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]:
            for second in inner.choices:
                assert help_text(name, second).startswith(f"usage: alignment {name} {second} ")


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_a_stage_help_says_what_it_does_and_needs_first_as_the_stage_table_does(stage: str) -> None:
    text = help_text(stage)
    does, needs = " ".join(DOES[stage].split()), stage_needs(stage)
    assert does in text and f"Needs first: {needs}" in text
    row = next(line for line in stage_table().splitlines() if line.startswith(f"| `{stage}` |"))
    assert does.split(":")[0] in row and needs in row


def test_what_a_stage_needs_follows_its_declared_inputs() -> None:
    assert stage_needs("build") == "no earlier stage"
    assert stage_needs("dpo-train") == "the dpo-pairs stage"
    assert stage_needs("report") == "the attribute and bon stages (and dpo-eval and audit, where they ran)"
    assert "receipts" in stage_needs("audit") and "receipts" not in stage_needs("score")


def test_the_executor_flag_is_offered_only_where_stages_have_shards(tmp_path: Path, capsys) -> None:
    assert "ack" in SHARDED
    run_help = help_text("run")
    assert all(name in run_help.split("--executor", 1)[1] for name in SHARDED)
    for stage in STAGE_NAMES:
        assert ("--executor" in help_text(stage)) == (stage in SHARDED), stage
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"task": {"name": "mathbook", "n_examples": 2}}))
    assert main(["bon", str(cfg), "--out", str(tmp_path / "r"), "--executor", "ray"]) == 2
    assert "unrecognized arguments: --executor ray" in capsys.readouterr().err


def test_judge_marks_its_required_options_and_a_subcommand_lifts_them(capsys) -> None:
    assert re.search(r"usage: alignment judge --task TASK --input \S+ --output \S+", help_text("judge"))
    assert main(["judge", "--task", "mathbook"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "required: --input, --output" in err
    assert main(["judge", "validate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("alignment judge validate: error: the following arguments are required: --task") and err.count("\n") == 1
    assert help_text("judge", "estimate").startswith("usage: alignment judge estimate [-h] --judged")
    assert "[--task" not in help_text("judge", "validate")


def test_judge_validate_without_labels_warns_in_one_line_that_the_rows_are_no_measurement(tmp_path: Path, capsys) -> None:
    assert main(["judge", "validate", "--task", "mathbook"]) == 0
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert "warning: no --labels" in captured.err and "not a measurement" in captured.err
    assert "accuracy" in captured.out
    labels = tmp_path / "l.jsonl"
    labels.write_text('{"full_response": "The answer is B.", "ack_label": false}\n')
    assert main(["judge", "validate", "--task", "mathbook", "--labels", str(labels)]) == 0
    assert capsys.readouterr().err == ""


def test_config_stages_prints_the_stage_table(capsys) -> None:
    assert main(["config", "stages"]) == 0
    table = capsys.readouterr().out
    assert table == stage_table()
    assert [re.match(r"\| `([\w-]+)` \|", line).group(1) for line in table.splitlines()[2:]] == list(STAGE_NAMES)
    # docs/pipeline.md carries the same table between its markers, so the docs and --help cannot drift.
    docs = (Path(__file__).resolve().parents[1] / "docs" / "pipeline.md").read_text()
    between = docs.split("<!-- stage-table: alignment config stages -->\n", 1)[1].split("<!-- /stage-table -->", 1)[0]
    assert between == table, "docs/pipeline.md's stage table is stale: paste `alignment config stages` between its markers"
