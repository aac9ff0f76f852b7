"""Typed configs: validation messages, `--set` overrides, precedence, the resolved config file, and
the CLI contract for bad input (exit 2, one line on stderr, never a traceback)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import yaml

from alignment import cli
from alignment.config import apply_overrides, config_hash, from_dict, parse_override, to_dict
from alignment.errors import UserError
from alignment.generation import GenerationConfig
from alignment.reasonbench.experiments.experiment_config import is_experiment
from alignment.run_config import RunConfig, load_config
from alignment.runner import prepare_run_dir

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, data: dict | str) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


# ----------------------------------------------------------------------------------- validation


def test_unknown_top_level_key_suggests_the_closest() -> None:
    with pytest.raises(UserError, match=r"unknown key 'generaton' \(did you mean 'generation'\?\)"):
        from_dict(RunConfig, {"generaton": {"n_samples": 2}})


def test_unknown_nested_key_names_its_section(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.yaml", {"generation": {"tempreature": 0.5}})
    with pytest.raises(UserError) as e:
        load_config(cfg)
    msg = str(e.value)
    assert "generation" in msg and "'tempreature'" in msg and "did you mean 'temperature'" in msg
    assert "\n" not in msg


def test_unknown_key_far_from_everything_has_no_suggestion() -> None:
    with pytest.raises(UserError, match="unknown key 'zzzzzz'") as e:
        from_dict(RunConfig, {"zzzzzz": 1})
    assert "did you mean" not in str(e.value)


@pytest.mark.parametrize(
    "data, field, allowed",
    [
        ({"generation": {"backend": "vlm"}}, "generation.backend", ["did you mean 'vllm'", "transformers"]),
        ({"generation": {"dtype": "fp8"}}, "generation.dtype", ["'float32'", "'bfloat16'"]),
        ({"task": {"name": "mathbok"}}, "task.name", ["did you mean 'mathbook'", "biasqa"]),
        ({"task": {"source": "web"}}, "task.source", ["'synthetic'", "'local'", "'hub'"]),
    ],
)
def test_disallowed_literal_names_field_and_allowed_values(data, field, allowed) -> None:
    with pytest.raises(UserError) as e:
        from_dict(RunConfig, data)
    msg = str(e.value)
    assert field in msg
    for value in allowed:
        assert value in msg
    assert "\n" not in msg


def test_close_literal_gets_a_suggestion() -> None:
    with pytest.raises(UserError, match=r"did you mean 'vllm'"):
        from_dict(RunConfig, {"generation": {"backend": "vlm"}})


@pytest.mark.parametrize(
    "data, field, expected",
    [
        ({"generation": {"n_samples": "four"}}, "generation.n_samples", "integer"),
        ({"generation": {"n_samples": 2.5}}, "generation.n_samples", "integer"),
        ({"generation": {"n_samples": True}}, "generation.n_samples", "integer"),
        ({"generation": {"temperature": "hot"}}, "generation.temperature", "number"),
        ({"generation": {"greedy": "yes"}}, "generation.greedy", "true or false"),
        ({"generation": {"model": 3}}, "generation.model", "string"),
        ({"task": {"splits": "test"}}, "task.splits", "list of str"),
        ({"task": {"splits": ["test", 1]}}, "task.splits[1]", "string"),
        ({"task": {"data_dir": 5}}, "task.data_dir", "str or null"),
        ({"generation": "fast"}, "generation", "mapping"),
    ],
)
def test_wrong_type_names_the_field_and_what_it_accepts(data, field, expected) -> None:
    with pytest.raises(UserError) as e:
        from_dict(RunConfig, data)
    msg = str(e.value)
    assert field in msg and expected in msg, msg


@pytest.mark.parametrize(
    "data, field",
    [
        ({"generation": {"n_samples": 0}}, "generation.n_samples"),
        ({"generation": {"top_p": 1.5}}, "generation.top_p"),
        ({"generation": {"temperature": -1}}, "generation.temperature"),
        ({"generation": {"device": "tpu"}}, "generation.device"),
        ({"task": {"n_examples": -1}}, "task.n_examples"),
        ({"task": {"source": "local"}}, "task.data_dir"),
        ({"name": "a/b"}, "name"),
    ],
)
def test_out_of_range_values_name_the_field(data, field) -> None:
    with pytest.raises(UserError, match=rf"config\.{field}\b"):
        from_dict(RunConfig, data)


def test_int_is_accepted_where_a_float_is_expected() -> None:
    cfg = from_dict(RunConfig, {"generation": {"temperature": 1}})
    assert cfg.generation.temperature == 1.0 and isinstance(cfg.generation.temperature, float)


def test_bad_yaml_and_missing_file_are_user_errors(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", "generation: [1\n")
    with pytest.raises(UserError, match=r"bad\.yaml line \d+: invalid YAML"):
        load_config(bad)
    with pytest.raises(UserError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")
    top = write(tmp_path / "list.yaml", "- a\n- b\n")
    with pytest.raises(UserError, match="mapping"):
        load_config(top)


def test_every_field_is_documented() -> None:
    def walk(cls: type, prefix: str = "") -> list[str]:
        hints = typing.get_type_hints(cls)
        missing = []
        for f in dataclasses.fields(cls):
            if not f.metadata.get("doc"):
                missing.append(prefix + f.name)
            if dataclasses.is_dataclass(hints[f.name]):
                missing += walk(hints[f.name], f"{prefix}{f.name}.")
        return missing

    assert walk(RunConfig) == []


# ReasonBench experiment configs (a top-level `reasonbench:`) are RunConfig's sibling, tested in
# tests/test_reasonbench_experiment.py.
@pytest.mark.parametrize("path", sorted(p for p in (REPO / "configs").glob("*.yaml") if not is_experiment(p)),
                         ids=lambda p: p.name)  # fmt: skip
def test_shipped_configs_load(path: Path) -> None:
    cfg = load_config(path)
    assert cfg.name
    assert from_dict(RunConfig, to_dict(cfg)) == cfg  # a resolved config loads back unchanged


def test_an_embedded_default_config_exists() -> None:
    assert any("default" in p.name for p in (REPO / "configs").glob("*.yaml"))


# ------------------------------------------------------------------------------------ overrides


def test_parse_override_reads_values_as_yaml() -> None:
    assert parse_override("generation.n_samples=4") == (["generation", "n_samples"], 4)
    assert parse_override("generation.temperature=0.5") == (["generation", "temperature"], 0.5)
    assert parse_override("generation.greedy=true") == (["generation", "greedy"], True)
    assert parse_override("task.splits=[train, test]") == (["task", "splits"], ["train", "test"])
    assert parse_override("generation.model=a/b=c") == (["generation", "model"], "a/b=c")
    assert parse_override("task.data_dir=null") == (["task", "data_dir"], None)
    with pytest.raises(UserError, match="KEY=VALUE"):
        parse_override("generation.n_samples")
    with pytest.raises(UserError, match="empty key"):
        parse_override("=3")


def test_set_overrides_nested_and_creates_missing_sections(tmp_path: Path) -> None:
    cfg = write(tmp_path / "c.yaml", {"task": {"n_examples": 3}})
    out = load_config(cfg, ["generation.n_samples=7", "task.splits=[train,test]", "name=other"])
    assert out.generation.n_samples == 7  # section absent from the YAML
    assert out.task.splits == ["train", "test"] and out.task.n_examples == 3
    assert out.name == "other"


def test_set_unknown_or_invalid_keys_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="did you mean 'n_samples'"):
        load_config(None, ["generation.n_sample=2"])
    with pytest.raises(UserError, match="not a section"):
        apply_overrides({"name": "x"}, ["name.sub=1"])
    with pytest.raises(UserError, match="generation.n_samples"):
        load_config(None, ["generation.n_samples=many"])


def test_precedence_defaults_then_yaml_then_set(tmp_path: Path) -> None:
    defaults = RunConfig()
    cfg = write(
        tmp_path / "prec.yaml",
        {"generation": {"n_samples": 3, "temperature": 0.5}, "task": {"n_examples": 2}},
    )
    out = load_config(cfg, ["generation.n_samples=5"])
    assert out.generation.n_samples == 5  # --set beats YAML
    assert out.generation.temperature == 0.5  # YAML beats default
    assert out.task.n_examples == 2
    assert out.generation.top_p == defaults.generation.top_p  # untouched default
    assert out.name == "prec"  # the run name defaults to the file's stem
    assert load_config(cfg, ["generation.n_samples=5", "generation.n_samples=6"]).generation.n_samples == 6


def test_config_hash_is_stable_and_sensitive() -> None:
    a, b = RunConfig(), RunConfig()
    assert config_hash(a) == config_hash(b)
    b.generation = GenerationConfig(n_samples=a.generation.n_samples + 1)
    assert config_hash(a) != config_hash(b)


def test_resolved_config_is_written_into_the_run_dir(tmp_path: Path) -> None:
    src = write(tmp_path / "c.yaml", {"generation": {"n_samples": 3}})
    cfg = load_config(src, ["task.n_examples=1"])
    run = prepare_run_dir(cfg, tmp_path / "run")
    written = yaml.safe_load((run.path / "config.yaml").read_text())
    assert written["task"]["n_examples"] == 1 and written["generation"]["n_samples"] == 3
    assert written["generation"]["top_p"] == RunConfig().generation.top_p  # defaults resolved too
    assert from_dict(RunConfig, written) == cfg
    assert not list(run.path.glob(".*.tmp"))  # atomic write left no temp file


def test_default_run_dir_is_runs_slash_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = prepare_run_dir(RunConfig(name="abc"), None)
    assert run.path == Path("runs") / "abc" and (tmp_path / "runs" / "abc" / "config.yaml").is_file()


def test_cli_build_writes_resolved_config(tmp_path: Path) -> None:
    src = write(tmp_path / "c.yaml", {"task": {"n_examples": 2}})
    out = tmp_path / "run"
    assert cli.main(["build", str(src), "--out", str(out), "--quiet", "--set", "task.n_examples=1"]) == 0
    written = yaml.safe_load((out / "config.yaml").read_text())
    assert written["task"]["n_examples"] == 1 and written["name"] == "c"


# ------------------------------------------------------------------------------------------ CLI


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("alignment: error: ")
    return lines[0]


@pytest.mark.parametrize(
    "data, overrides, expect",
    [
        ({"generaton": {}}, [], "did you mean 'generation'"),
        ({"generation": {"backend": "vlm"}}, [], "transformers, vllm"),  # a test may register more backends before
        ({"generation": {"n_samples": "four"}}, [], "generation.n_samples"),
        ({}, ["generation.tempreature=1"], "did you mean 'temperature'"),
        ({}, ["generation.dtype=fp8"], "'float32'"),
        ({}, ["nonsense"], "KEY=VALUE"),
    ],
)
def test_cli_bad_config_exits_2_with_one_line(tmp_path: Path, capsys, data, overrides, expect) -> None:
    src = write(tmp_path / "bad.yaml", data)
    sets = [a for o in overrides for a in ("--set", o)]
    for argv in (
        ["run", str(src), "--out", str(tmp_path / "r"), *sets],
        ["build", str(src), "--out", str(tmp_path / "r"), *sets],
        ["generate", str(src), "--out", str(tmp_path / "r"), *sets],
        ["config", "show", str(src), *sets],
    ):
        assert cli.main(argv) == 2
        captured = capsys.readouterr()
        assert expect in one_error_line(captured.err)
    assert not (tmp_path / "r" / "build").exists()  # nothing ran


def test_cli_missing_config_file_and_bad_yaml(tmp_path: Path, capsys) -> None:
    assert cli.main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert "config file not found" in one_error_line(capsys.readouterr().err)
    bad = write(tmp_path / "bad.yaml", "a: [1\n")
    assert cli.main(["config", "show", str(bad)]) == 2
    assert "invalid YAML" in one_error_line(capsys.readouterr().err)


def test_cli_generate_before_build_is_a_user_error(tmp_path: Path, capsys) -> None:
    src = write(tmp_path / "c.yaml", {})
    assert cli.main(["generate", str(src), "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert "has not run yet" in one_error_line(capsys.readouterr().err)


def test_cli_config_show(tmp_path: Path, capsys) -> None:
    assert cli.main(["config", "show"]) == 0
    out = capsys.readouterr().out
    assert "generation.n_samples (int, default 4)" in out and "task.name (str" in out
    src = write(tmp_path / "c.yaml", {"generation": {"n_samples": 3}})
    assert cli.main(["config", "show", str(src), "--set", "generation.top_p=0.5"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["generation"]["n_samples"] == 3 and shown["generation"]["top_p"] == 0.5
    # --set without a file applies to the defaults instead of being silently ignored
    assert cli.main(["config", "show", "--set", "generation.n_samples=0"]) == 2
    assert "generation.n_samples" in one_error_line(capsys.readouterr().err)


def test_console_script_exit_code_and_stderr(tmp_path: Path) -> None:
    src = write(tmp_path / "bad.yaml", {"generation": {"n_smples": 2}})
    script = Path(sys.executable).parent / "alignment"
    cmd = [str(script)] if script.is_file() else [sys.executable, "-m", "alignment.cli"]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [*cmd, "config", "show", str(src)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 2
    assert "did you mean 'n_samples'" in one_error_line(proc.stderr)
    assert proc.stdout == ""
