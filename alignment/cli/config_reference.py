"""`alignment config reference`: docs/config.md, generated from the configs' own `doc()` strings.

Every field is documented once, where it is declared; this page only lays those strings out, so
it cannot drift from the code as long as it is regenerated (`tests/test_docs.py` fails when the
committed page differs from what this module writes).
"""

from __future__ import annotations

from typing import Any

from alignment.config import FieldDoc, field_docs

HEADER = """# Config reference

Generated from the code by `alignment config reference > docs/config.md`: every field of the run
configs with its type, default and the documentation string it is declared with. Do not edit
this page by hand; change the field's `doc(...)` and regenerate (`tests/test_docs.py` fails when
it is stale). How configs are written and resolved: [writing-configs.md](writing-configs.md).
"""


def _cell(text: str) -> str:
    """Table-safe: one line; `|` does not end the cell, `*` italicises nothing, `<name>` is no tag."""
    text = " ".join(str(text).split())
    for char, escaped in (("|", "\\|"), ("*", "\\*"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(char, escaped)
    return text


def _default(value: Any) -> str:
    """A default as code: only `|` needs escaping inside a table's code span."""
    return "`" + " ".join(repr(value).split()).replace("|", "\\|").replace("`", "'") + "`"


def _table(title: str, doc: str, leaves: list[FieldDoc]) -> list[str]:
    lines = [f"### {title}", ""]
    if doc:
        lines += [_cell(doc), ""]
    lines += ["| field | type | default | what it sets |", "|---|---|---|---|"]
    lines += [f"| `{d.name}` | {_cell(d.type)} | {_default(d.default)} | {_cell(d.doc)} |" for d in leaves]
    return [*lines, ""]


def section_tables(cls: type, prefix: str = "", top: str = "top level", top_doc: str = "") -> list[str]:
    """One table per section of `cls` (its top-level leaves first), in declaration order."""
    docs = list(field_docs(cls, prefix))
    sections = [(prefix, top, top_doc)] + [(d.name + ".", d.name, d.doc) for d in docs if d.section]
    lines: list[str] = []
    for dotted, title, doc in sections:
        # a section's own leaves: directly under it, not inside a nested section
        leaves = [d for d in docs if not d.section and d.name.startswith(dotted)
                  and d.name.count(".") == dotted.count(".")]
        if leaves:
            lines += _table(title, doc, leaves)
    return lines


def reference() -> str:
    """The whole page: run configs, then ReasonBench experiment configs (with the SFT learner's)."""
    from alignment.reasonbench.experiments.experiment_config import ExperimentRunConfig
    from alignment.reasonbench.experiments.sft import SFTConfig
    from alignment.run_config import RunConfig

    lines = [HEADER,
             "## Run configs", "",
             "What `alignment run CONFIG` reads (`configs/embedded_default.yaml` and the other pipeline configs).", "",
             *section_tables(RunConfig, top="top level (run configs)"),
             "## ReasonBench experiment configs", "",
             "A config with a top-level `reasonbench:` section (`configs/reasonbench_embedded.yaml`).", "",
             *section_tables(ExperimentRunConfig, top="top level (experiment configs)"),
             *section_tables(SFTConfig, "reasonbench.sft.", "reasonbench.sft",
                             "The `reasonbench.sft` mapping: the LoRA SFT learner's settings "
                             "(`alignment/reasonbench/experiments/sft.py`), validated when `sft` is among the learners.")]
    return "\n".join(lines).rstrip() + "\n"


def stage_table() -> str:
    """The docs' stage table, from the same words as `alignment <stage> --help`: what each stage
    does (`alignment.stages.DOES`) and what it needs first (the runner's declared inputs)."""
    from alignment.runner import STAGE_NAMES, stage_needs
    from alignment.stages import DOES

    lines = ["| stage | what it does | needs first |", "|---|---|---|"]
    lines += [f"| `{name}` | {_cell(DOES[name])} | {_cell(stage_needs(name))} |" for name in STAGE_NAMES]
    return "\n".join(lines) + "\n"
