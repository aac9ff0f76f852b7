"""The runner: the stage table, stage keys, skipping, timing and manifests (`alignment run CONFIG`).

A stage is a plain function `fn(section, ctx) -> counts` of its own typed config section and a
`Context` (run dir, task object, quiet flag, the other sections it declared). The runner alone
computes keys, skips a stage whose key is unchanged, times it and writes its manifest. A stage's
key hashes exactly the config sections it declares (the task section always: every stage may use
the task object), or of its own section only the sub-sections and fields it declares (the DPO
stages: `DPOConfig.subsection`), the chosen judge's code where it judges, and the keys of the
stages it reads, so editing one section reruns that stage
and everything downstream, and nothing else.

Called from Python, a stage needs no key: `generate(GenerationConfig(...), Context(RunDir(p),
TASKS.get("mathbook")))` works on a run dir; `run_stage(name, cfg, run)` does what the CLI does.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from alignment.config import config_hash, to_dict
from alignment.context import Context
from alignment.disk.faults import writing
from alignment.errors import UserError, did_you_mean
from alignment.executor import executing
from alignment.run_config import RunConfig
from alignment.runtime.console import stage_line
from alignment.store import RunDir, locked, make_folder, write_text
from alignment.tasks import TASKS


def _always(cfg: RunConfig) -> bool:
    return True


@dataclass(frozen=True)
class Stage:
    name: str
    fn: Callable[[Any, Context], dict[str, int]]
    section: str | None  # the config section passed as the first argument
    reads: tuple[str, ...] = ()  # further sections, through ctx.section
    inputs: tuple[str, ...] = ()  # stages whose artifacts it reads
    enabled: Callable[[RunConfig], bool] = _always
    optional: tuple[str, ...] = ()  # read when present (keyed then), not required
    # Files outside the stage artifacts that the stage reads: (section, run) -> {path: content
    # hash or None}, part of the key, so a file that appears or changes reruns the stage.
    files: Callable[[Any, RunDir], dict[str, str | None]] | None = None
    off_reason: str = ""  # said when `enabled` turns the stage off
    # Sub-sections or fields of `section` that the stage reads and its key hashes (the section's
    # `declared`); empty: the whole section.
    fields: tuple[str, ...] = ()

    def sections(self) -> list[str]:
        names = ["task", *([self.section] if self.section else []), *self.reads]
        return list(dict.fromkeys(names))


# dpo-train: what each run computes (`train`), which runs (variants, seeds) and how they run.
DPO_TRAIN_READS = ("train", "variants", "seeds", "device", "shared_reference", "gradient_checkpointing")
DPO_OFF = " (dpo.enabled is false, or task.splits has no split besides dpo.eval_split to give pairs)"


def _stages() -> list[Stage]:
    from alignment.stages import (
        ack,
        attribute,
        audit,
        bon,
        build,
        dpo_eval,
        dpo_pairs,
        dpo_train,
        generate,
        receipts,
        report,
        score,
    )

    def receipts_on(c: RunConfig) -> bool:
        return c.attribution.receipts

    def dpo_on(c: RunConfig) -> bool:
        """DPO needs prompts that give pairs besides the held-out ones it is evaluated on."""
        return c.dpo.enabled and any(s != c.dpo.eval_split for s in c.task.splits)

    return [
        Stage("build", build.build, "task", files=build.data_files),
        Stage("generate", generate.generate, "generation", inputs=("build",)),
        Stage("receipts", receipts.receipts, "attribution", ("generation",), ("build", "generate"), receipts_on),
        Stage("attribute", attribute.attribute, "attribution", inputs=("generate",)),
        Stage("score", score.score, "reward", inputs=("build", "generate", "attribute")),
        Stage("ack", ack.ack, "judge", inputs=("generate",)),
        Stage("bon", bon.bon, "bon", inputs=("generate", "score", "ack")),
        Stage("audit", audit.audit, "audit", ("generation", "reward", "judge", "attribution"),
              ("build", "generate", "attribute", "ack"), lambda c: c.audit.enabled),
        Stage("dpo-pairs", dpo_pairs.dpo_pairs, "dpo", inputs=("build", "generate", "score", "ack"), enabled=dpo_on,
              off_reason=DPO_OFF, fields=("pairs",)),
        Stage("dpo-train", dpo_train.dpo_train, "dpo", inputs=("dpo-pairs",), enabled=dpo_on, off_reason=DPO_OFF,
              fields=DPO_TRAIN_READS),
        Stage("dpo-eval", dpo_eval.dpo_eval, "dpo", ("judge", "generation", "attribution"), ("build", "dpo-pairs", "dpo-train"),
              enabled=dpo_on, off_reason=DPO_OFF, fields=("eval", "seeds")),
        Stage("report", report.report, "report", inputs=("attribute", "bon"), optional=("dpo-eval", "audit"),
              files=report.label_files),
    ]


STAGE_NAMES = ("build", "generate", "receipts", "attribute", "score", "ack", "bon", "audit", "dpo-pairs", "dpo-train", "dpo-eval", "report")


def get_stage(name: str) -> Stage:
    for s in _stages():
        if s.name == name:
            return s
    raise UserError(f"unknown stage {name!r}{did_you_mean(name, STAGE_NAMES)}")


# Stages that also read `receipts` when `attribution.receipts` is on.
RECEIPT_READERS = ("attribute", "audit")


def stage_inputs(stage: Stage, cfg: RunConfig) -> list[str]:
    """Declared inputs, plus `receipts` for attribute and audit when receipts are on."""
    extra = ["receipts"] if stage.name in RECEIPT_READERS and cfg.attribution.receipts else []
    return [*stage.inputs, *extra]


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def stage_needs(name: str) -> str:
    """What a stage needs first, from its declared inputs: the `--help` of a stage command and the
    docs' stage table say it, so it cannot disagree with what `run.require` enforces.

    >>> stage_needs("build"), stage_needs("bon")
    ('no earlier stage', 'the generate, score and ack stages')
    >>> stage_needs("attribute")
    'the generate stage (and receipts, with attribution.receipts: true)'
    """
    stage = get_stage(name)
    if not stage.inputs:
        return "no earlier stage"
    text = f"the {_listed(stage.inputs)} stage" + ("s" if len(stage.inputs) > 1 else "")
    if name in RECEIPT_READERS:
        text += " (and receipts, with attribution.receipts: true)"
    if stage.optional:
        text += f" (and {_listed(stage.optional)}, where they ran)"
    return text


def stage_key(stage: Stage, cfg: RunConfig, run: RunDir) -> str:
    parts: dict[str, Any] = {s: to_dict(getattr(cfg, s)) for s in stage.sections()}
    if stage.fields and stage.section:
        parts[stage.section] = getattr(cfg, stage.section).declared(stage.fields)
    parts["inputs"] = {name: run.key(name) for name in stage_inputs(stage, cfg)}
    parts["inputs"] |= {name: key for name in stage.optional if (key := run.key(name)) is not None}
    if stage.files is not None:
        parts["files"] = stage.files(getattr(cfg, stage.section) if stage.section else None, run)
    organisms = sorted(organism_names(parts))
    if organisms:
        # A preset name says nothing about what was trained: key on the organism's content hash
        # so a changed recipe reruns the stages that used the old organism.
        from alignment.organism import organism_id

        parts["organisms"] = {name: organism_id(name) for name in organisms}
    if "judge" in parts:
        # The chosen judge's code and prompts are not config: a rule fix must relabel the
        # responses it judged, and only those (an LLM-judged run ignores the keyword rules).
        from alignment.judge import code_id

        parts["judge_code"] = code_id(cfg.judge, TASKS.get(cfg.task.name).judge_as)
    if stage.name == "score":
        # Nor are the sentences the score stage appends: a reworded or newly added acknowledgment
        # or denial sentence must rescore (and an older score gains the denial column).
        from alignment.stages.score import appended_sentences

        parts["sentences"] = appended_sentences(TASKS.get(cfg.task.name))
    return config_hash({"stage": stage.name, **parts})


def organism_names(value: Any) -> set[str]:
    """Model-organism preset names anywhere in a (nested) config dict.

    >>> sorted(organism_names({"generation": {"model": "organism-policy"}, "x": ["organism-rm", 3]}))
    ['organism-policy', 'organism-rm']
    """
    if isinstance(value, str):
        return {value} if value.startswith("organism-") else set()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*(organism_names(v) for v in value)) if value else set()
    return set()


def ensure_organisms(cfg: RunConfig, log: Callable[[str], None] = print, stages: list[str] | None = None) -> None:
    """The explicit, cached step `alignment run` takes before its stages: train every model
    organism named in the sections of the stages about to run (`alignment organism train NAME`
    does one)."""
    sections = {sec for name in (stages or STAGE_NAMES) for sec in get_stage(name).sections()}
    names = sorted(organism_names({s: to_dict(getattr(cfg, s)) for s in sections}))
    if names:
        from alignment.organism import ensure_model

        for name in names:
            ensure_model(name, log)


def make_run_dir(cfg: RunConfig, out: str | Path | None) -> Path:
    """Create the run dir (`--out`, default runs/<name>/); a path of the wrong kind is a UserError."""
    if out is not None and ("\0" in str(out) or not str(out).strip()):
        raise UserError(f"--out {str(out)[:80]!r}: not a usable folder path")
    return make_folder(Path(out) if out is not None else Path("runs") / cfg.name)


def prepare_run_dir(cfg: RunConfig, out: str | Path | None) -> RunDir:
    run = RunDir(make_run_dir(cfg, out))
    write_text(run.path / "config.yaml", yaml.safe_dump(to_dict(cfg), sort_keys=False))
    return run


@contextlib.contextmanager
def locked_run(cfg: RunConfig, out: str | Path | None) -> Iterator[RunDir]:
    """The run dir, held under its exclusive lock for the whole block (what every CLI command
    that writes a run dir uses): a second process on the same dir fails fast, naming the first."""
    with locked(make_run_dir(cfg, out)):
        yield prepare_run_dir(cfg, out)


def context(stage: Stage, cfg: RunConfig, run: RunDir, quiet: bool = False, key: str | None = None) -> Context:
    return Context(run, TASKS.get(cfg.task.name), quiet, key, {s: getattr(cfg, s) for s in stage.sections()})


# What a stage body returns: its row counts, the models it used and extra manifest fields.
StageResult = tuple[dict[str, int], dict[str, str], dict[str, Any]]


def run_keyed(name: str, key: str, run: RunDir, body: Callable[[], StageResult], quiet: bool = False,
              log: Callable[[str], None] = stage_line) -> bool:
    """The conventions every stage of every pipeline runs under (the toolkit's stages here, the
    ReasonBench experiment's in `alignment.reasonbench.experiments.experiment`): skip a stage whose
    manifest carries `key`, else invalidate the old manifest, run `body`, time it and write the
    manifest. Returns True when it ran."""
    if run.is_done(name, key, stage_line):
        if not quiet:
            log(f"[{name}] up to date, skipped")
        return False
    run.invalidate(name)  # no old manifest may vouch for data rewritten below
    started = time.time()
    counts, models, extra = body()
    manifest = run.finish(name, key, started, counts, models=models, extra=extra)
    if not quiet:
        log(f"[{name}] done in {manifest['seconds']:.1f}s: {manifest['rows']}")
    return True


def run_stage(name: str, cfg: RunConfig, run: RunDir, quiet: bool = False, log: Callable[[str], None] = stage_line) -> bool:
    """Run one stage unless its key is unchanged; returns True when it ran."""
    stage = get_stage(name)
    if not stage.enabled(cfg):
        if not quiet:
            log(f"[{stage.name}] off in this config{stage.off_reason}, skipped")
        return False
    for dep in stage_inputs(stage, cfg):
        run.require(dep)
    key = stage_key(stage, cfg, run)

    def body() -> StageResult:
        ctx = context(stage, cfg, run, quiet, key)
        # A full disk is reported as writing this stage's folder when the library names no file.
        with writing(run.stage(stage.name)), executing(cfg.executor.for_stage(name)):  # where its shards run; the rows, and so the key, do not depend on it
            counts = stage.fn(getattr(cfg, stage.section) if stage.section else None, ctx)
        return counts, ctx.models, ctx.extra

    return run_keyed(stage.name, key, run, body, quiet, log)


def run_all(cfg: RunConfig, run: RunDir, quiet: bool = False, stages: list[str] | None = None) -> None:
    names = [n for n in STAGE_NAMES if stages is None or n in stages]
    ensure_organisms(cfg, (lambda m: None) if quiet else stage_line, names)
    for name in names:
        run_stage(name, cfg, run, quiet)
