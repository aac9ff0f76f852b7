"""The paper grid's sizes for `alignment.measure.cluster.projection`: read from `configs/paper_*.yaml` and
counted in the public datasets with the tasks' own builders.

A config's examples are what its task would build: AQuA-RAT splits that have a local
`{split}.json` are built (de-duplication included) and counted; a split with no local file (the
hub's train split) takes its row count from `--aqua-rows`, a dataset card figure, without
de-duplication (an upper bound). Winogender splits are built from its tsv files. Prompt lengths
are the mean characters of the built prompts (system + query, original and counterfactual).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alignment.errors import UserError

VARIANTS = 2  # every example is sampled on its original and its counterfactual prompt


@dataclass(frozen=True)
class Grid:
    """One (policy, task) config of the paper grid and what it has to compute."""

    name: str
    task: str
    policy: str
    splits: dict[str, int]  # examples per split
    sources: list[str]  # where each split's count came from
    n_samples: int
    greedy: bool
    batch_size: int
    max_new_tokens: int
    prompt_chars: float  # mean characters of a built prompt (system + query)
    rubric_chars: int  # characters of the judge's rubric for this task
    uncounted: list[str]  # splits whose size is a --aqua-rows figure, not a count

    @property
    def examples(self) -> int:
        return sum(self.splits.values())

    @property
    def per_prompt(self) -> int:
        """Responses per prompt: the samples plus the greedy one."""
        return self.n_samples + int(self.greedy)

    @property
    def prompts(self) -> int:
        return VARIANTS * self.examples

    @property
    def responses(self) -> int:
        """Responses, which is also the judge calls (`ack` labels every response)."""
        return self.prompts * self.per_prompt

    @property
    def scored_per_example(self) -> int:
        """Sequences one reward model scores per example: original responses plain and with the
        acknowledgment appended (D and C reuse that score), counterfactual ones plain.

        >>> Grid("g", "biasqa", "p", {"test": 1}, [], 16, True, 16, 2048, 0.0, 0, []).scored_per_example
        51
        """
        return 3 * self.per_prompt

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task, "policy": self.policy, "splits": self.splits,
                "sources": self.sources, "examples": self.examples, "prompts": self.prompts,
                "responses": self.responses, "scored_per_rm": self.examples * self.scored_per_example,
                "judge_calls": self.responses, "n_samples": self.n_samples, "greedy": self.greedy,
                "batch_size": self.batch_size, "max_new_tokens": self.max_new_tokens,
                "prompt_chars": round(self.prompt_chars, 1), "rubric_chars": self.rubric_chars,
                "uncounted_splits": self.uncounted}


def count_lines(path: Path) -> int:
    """Non-empty lines of a text file (rows of a json-lines file; rows plus header of a tsv)."""
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def _built(task: Any, data_dir: Path, splits: list[str]) -> list[dict[str, Any]]:
    """`task` (a TaskConfig) built from `data_dir`, restricted to `splits`."""
    import dataclasses

    from alignment.tasks import TASKS

    if not splits:
        return []
    cfg = dataclasses.replace(task, source="local", data_dir=str(data_dir), splits=splits,
                              split_examples={s: n for s, n in task.split_examples.items() if s in splits})
    return list(TASKS.get(task.name).build(cfg))


def task_sizes(task: Any, aqua_dir: Path, wino_dir: Path, aqua_rows: dict[str, int]) -> dict[str, Any]:
    """Examples per split, where each count came from, mean prompt characters and the splits not
    counted (sized by a flag) of one task config."""
    if task.name == "mathbook":
        local = [s for s in task.splits if (aqua_dir / f"{s}.json").is_file()]
        rows = _built(task, aqua_dir, local)
        counts, sources, uncounted = {}, [], []
        for split in task.splits:
            if split in local:
                counts[split] = sum(r["split"] == split for r in rows)
                sources.append(f"{split}: built from {aqua_dir / f'{split}.json'} ({count_lines(aqua_dir / f'{split}.json')} rows, "
                               "de-duplicated) and counted")
            elif split in aqua_rows:
                n = aqua_rows[split] if task.examples(split) == 0 else min(task.examples(split), aqua_rows[split])
                counts[split] = n
                uncounted.append(split)
                sources.append(f"{split}: {aqua_rows[split]} rows from --aqua-rows (AQuA-RAT dataset card; no local "
                               "file, not counted, not de-duplicated)")
            else:
                raise UserError(f"task.splits: AQuA-RAT split {split!r} has no file {aqua_dir / f'{split}.json'} "
                                f"and no --aqua-rows {split}=N figure")
    elif task.name == "biasqa":
        rows = _built(task, wino_dir, list(task.splits))
        counts, uncounted = {s: sum(r["split"] == s for r in rows) for s in task.splits}, []
        sentences = wino_dir / "all_sentences.tsv"
        extra = f"; all_sentences.tsv holds {count_lines(sentences) - 1} rendered sentences" if sentences.is_file() else ""
        sources = [f"built from {wino_dir / 'templates.tsv'} ({count_lines(wino_dir / 'templates.tsv') - 1} templates, "
                   f"split by occupation) and counted{extra}"]
    else:
        raise UserError(f"task.name: {task.name!r}: the projection counts mathbook and biasqa only")
    if not rows:  # no split with a local file: prompt length unknown
        raise UserError(f"task {task.name}: no local split to measure prompt length from ({aqua_dir})")
    chars = [len(r["system"]) + len(r[q]) for r in rows for q in ("query", "cf_query")]
    return {"splits": counts, "sources": sources, "prompt_chars": sum(chars) / len(chars), "uncounted": uncounted}


def paper_grid(configs: Path, aqua_dir: Path, wino_dir: Path, aqua_rows: dict[str, int]) -> list[Grid]:
    """Every `paper_*.yaml` run config under `configs` but the `paper_dpo_*` ones, which sample the same prompts for DPO."""
    from alignment.run_config import load_config
    from alignment.tasks.base import load_prompt

    paths = sorted(p for p in configs.glob("paper_*.yaml") if not p.name.startswith("paper_dpo_"))
    if not paths:
        raise UserError(f"--configs: no paper_*.yaml run config in {configs}")
    grids = []
    for path in paths:
        cfg = load_config(path)
        gen = cfg.generation
        size = task_sizes(cfg.task, aqua_dir, wino_dir, aqua_rows)
        if gen.splits is not None:  # generation samples only these built splits
            size["splits"] = {s: n for s, n in size["splits"].items() if s in gen.splits}
        grids.append(Grid(cfg.name, cfg.task.name, gen.model, size["splits"], size["sources"], gen.n_samples, gen.greedy,
                          gen.batch_size, gen.max_new_tokens, size["prompt_chars"],
                          len(load_prompt(f"judge_{cfg.task.name}")), size["uncounted"]))
    return grids
