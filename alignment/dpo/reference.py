"""The reference model's log-probabilities, computed once per distinct (prompt, response).

TRL's `DPOTrainer` runs a reference forward over every pair in every step (or, with
`precompute_ref_log_probs`, once per training run). A DPO round here trains every reward
variant under several seeds on pairs drawn from the same samples, so the same (prompt,
response) comes back many times: in the pairs of another variant, and in every seed. The
reference is the base policy with the LoRA adapter disabled, so its log-probability of a
response depends on nothing a variant or a seed changes. `RefStore` keeps them in
`dpo-train/ref_logps-<model key>.parquet`; `shared_ref_trainer` is a `DPOTrainer` whose
precompute step looks responses up there and runs the reference only on the missing ones.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.store import write_parquet


def completion_key(prompt_ids: Sequence[int], completion_ids: Sequence[int]) -> str:
    """Identity of one tokenized (prompt, response).

    >>> completion_key([1, 2], [3]) == completion_key([1, 2], [3]), completion_key([1, 2], [3]) == completion_key([1], [2, 3])
    (True, False)
    """
    text = ",".join(map(str, prompt_ids)) + "|" + ",".join(map(str, completion_ids))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class RefStore:
    """Reference log-probabilities by `completion_key`, persisted (atomically) after each fill."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values: dict[str, float] = {}
        if path.is_file():
            df = pd.read_parquet(path)
            self.values = dict(zip(df["key"], df["logp"].astype(float), strict=True))
        self.computed = 0  # completions run through the reference by this process
        self.reused = 0  # completions found in the store

    def save(self) -> None:
        write_parquet(self.path, pd.DataFrame({"key": list(self.values), "logp": list(self.values.values())}))

    def missing(self, prompts: list[list[int]], completions: list[list[int]]) -> list[tuple[list[int], list[int]]]:
        """Distinct (prompt, completion) pairs not in the store, in first-seen order."""
        seen: dict[str, tuple[list[int], list[int]]] = {}
        for p, c in zip(prompts, completions, strict=True):
            k = completion_key(p, c)
            if k not in self.values and k not in seen:
                seen[k] = (p, c)
        return list(seen.values())


def pseudo_pairs(items: list[tuple[list[int], list[int]]]) -> list[dict[str, list[int]]]:
    """Rows the preference collator accepts: two completions of the same prompt per row (an odd one
    out is paired with itself), so each missing completion is run through the reference once.

    >>> [(r["chosen_ids"], r["rejected_ids"]) for r in pseudo_pairs([([1], [2]), ([1], [3]), ([5], [6])])]
    [([2], [3]), ([6], [6])]
    """
    by_prompt: dict[tuple[int, ...], list[list[int]]] = {}
    for p, c in items:
        by_prompt.setdefault(tuple(p), []).append(c)
    rows = []
    for p, comps in by_prompt.items():
        for i in range(0, len(comps), 2):
            a = comps[i]
            b = comps[i + 1] if i + 1 < len(comps) else a
            rows.append({"prompt_ids": list(p), "chosen_ids": a, "rejected_ids": b})
    return rows


def shared_ref_trainer(store: RefStore, batch_size: int) -> Any:
    """A `DPOTrainer` subclass whose reference log-probabilities come from `store` (filled as needed).

    Set `precompute_ref_log_probs=True` in its arguments. Under several processes (DeepSpeed,
    accelerate) it falls back to TRL's own precompute: the store is one process's file.
    """
    import torch
    from torch.utils.data import DataLoader
    from trl import DPOTrainer

    class SharedRefDPOTrainer(DPOTrainer):
        def _precompute_ref_logps(self, dataset: Any, name: str, bs: int) -> Any:
            if self.accelerator.num_processes > 1 or self.is_deepspeed_enabled:
                return super()._precompute_ref_logps(dataset, name, bs)
            prompts = [list(p) for p in dataset["prompt_ids"]]
            chosen, rejected = [list(c) for c in dataset["chosen_ids"]], [list(r) for r in dataset["rejected_ids"]]
            todo = store.missing(prompts + prompts, chosen + rejected)
            store.reused += 2 * len(prompts) - len(todo)
            if todo:
                rows = pseudo_pairs(todo)
                loader = DataLoader(rows, batch_size=batch_size, collate_fn=self.data_collator, shuffle=False)
                outs: list[torch.Tensor] = []
                for batch in loader:
                    batch = {k: v.to(self.accelerator.device) for k, v in batch.items()}
                    a, b = self.compute_ref_log_probs(self.model, batch)
                    outs += [a.float().cpu(), b.float().cpu()]
                for i, row in enumerate(rows):
                    chunk = outs[2 * (i // batch_size)], outs[2 * (i // batch_size) + 1]
                    j = i % batch_size
                    store.values[completion_key(row["prompt_ids"], row["chosen_ids"])] = float(chunk[0][j])
                    store.values[completion_key(row["prompt_ids"], row["rejected_ids"])] = float(chunk[1][j])
                store.computed += len(todo)
                store.save()
            ref_c = [store.values[completion_key(p, c)] for p, c in zip(prompts, chosen, strict=True)]
            ref_r = [store.values[completion_key(p, r)] for p, r in zip(prompts, rejected, strict=True)]
            return dataset.add_column("ref_chosen_logps", ref_c).add_column("ref_rejected_logps", ref_r)

    return SharedRefDPOTrainer
