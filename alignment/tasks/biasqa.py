"""BiasQA: Winogender pronoun resolution with the pronoun masked; protected feature = occupation.

`alignment build --task biasqa --data-dir data/winogender --out runs/x` builds it.

The sentence's pronoun becomes [MASK]; two gendered options in random order. The stereotypical
option (stored as `answer`, as published) is the female pronoun when BLS % women > 50, else the
male one. Counterfactual: the occupation noun replaced by "person". Declared sources:
`occupation` (ground, protected) and `instruction` (norm). Splits are by occupation (the
independent unit): a stable hash sends each occupation to train or test.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from alignment.errors import UserError
from alignment.tasks.base import (
    TaskConfig,
    check_text,
    fill,
    finish_row,
    format_options,
    load_prompt,
    quiet_datasets,
    read_utf8,
    source,
)
from alignment.tasks.synthetic_bias import synthetic_templates

PRONOUNS = {"NOM": ("he", "she"), "ACC": ("him", "her"), "POSS": ("his", "her")}


def _read_tsv(path: Path) -> list[dict[str, Any]]:
    import datasets

    quiet_datasets()
    if not path.is_file():
        raise UserError(f"Winogender file not found: {path}")
    read_utf8(path, "a tab-separated Winogender file")
    if sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip()) < 2:
        raise UserError(f"{path}: no rows below the header line (a tab-separated Winogender file)")
    try:
        ds = datasets.load_dataset("csv", data_files=str(path), delimiter="\t", split="train")
        return list(ds)
    except Exception as e:  # datasets wraps parser errors in several exception types
        raise UserError(f"{path}: not a tab-separated Winogender file ({type(e).__name__})") from None


def _need(row: dict[str, Any], key: str, where: str) -> Any:
    if key not in row or row[key] is None or row[key] == "":
        raise UserError(f"{where}: missing field '{key}'")
    return row[key]


def load_templates(cfg: TaskConfig) -> list[dict[str, Any]]:
    """Rows of {occupation, participant, referent, sentence, pct_female} from the chosen source."""
    if cfg.source == "synthetic":
        return synthetic_templates()
    if cfg.source == "hub":
        raise UserError(
            "task.source: hub is not available for biasqa (no canonical hub copy with BLS "
            "statistics); download the Winogender tsv files and use source: local"
        )
    root = Path(cfg.data_dir or "")
    stats_path = root / "occupations-stats.tsv"
    stats = {}
    for i, r in enumerate(_read_tsv(stats_path)):
        where = f"{stats_path} row {i + 2}"
        occ = check_text(_need(r, "occupation", where), f"{where}: field 'occupation'")
        if occ in stats:  # two BLS rows for one occupation: which one holds is not ours to guess
            raise UserError(f"{where}: occupation {occ!r} is listed twice in {stats_path.name}")
        try:
            pct = float(_need(r, "bls_pct_female", where))
        except (TypeError, ValueError):
            raise UserError(f"{where}: field 'bls_pct_female' is not a number") from None
        if not 0 <= pct <= 100:  # also rejects nan
            raise UserError(f"{where}: field 'bls_pct_female' must be a percentage in [0, 100], got {pct}")
        stats[occ] = pct
    tpl_path = root / "templates.tsv"
    out = []
    first: dict[tuple[Any, ...], int] = {}
    for i, r in enumerate(_read_tsv(tpl_path)):
        where = f"{tpl_path} row {i + 2}"
        # A repeated template would be two examples with one prompt (ids differ by index only).
        key = tuple(r.get(k) for k in ("occupation(0)", "other-participant(1)", "answer", "sentence"))
        if key in first:
            raise UserError(f"{where}: repeats row {first[key]} (same occupation, participant, answer and sentence)")
        first[key] = i + 2
        occ = check_text(_need(r, "occupation(0)", where), f"{where}: field 'occupation(0)'")
        if occ not in stats:
            raise UserError(f"{where}: occupation {occ!r} has no row in {stats_path.name}")
        referent = str(_need(r, "answer", where))
        if referent not in ("0", "1"):
            raise UserError(f"{where}: field 'answer' must be 0 or 1, got {referent!r}")
        out.append(
            {
                "occupation": occ,
                "participant": check_text(_need(r, "other-participant(1)", where), f"{where}: field 'other-participant(1)'"),
                "referent": "occupation" if referent == "0" else "participant",
                "sentence": check_text(_need(r, "sentence", where), f"{where}: field 'sentence'"),
                "pct_female": stats[occ],
            }
        )
    return out


def unit_split(occupation: str) -> str:
    """Stable train/test assignment of an occupation.

    >>> unit_split("nurse") in ("train", "test")
    True
    """
    h = int(hashlib.sha256(occupation.encode()).hexdigest(), 16)
    return "train" if h % 2 == 0 else "test"


def build_example(t: dict[str, Any], index: int, rng: random.Random, where: str) -> dict[str, Any]:
    slots = sum(t["sentence"].count(f"${k}_PRONOUN") for k in PRONOUNS)
    kinds = [k for k in PRONOUNS if f"${k}_PRONOUN" in t["sentence"]]
    if slots != 1:
        raise UserError(f"{where}: field 'sentence' must hold exactly one pronoun slot ($NOM_PRONOUN, $ACC_PRONOUN "
                        f"or $POSS_PRONOUN), found {slots}")
    # The occupation is the protected source: one slot, so the counterfactual changes one word.
    occupations = t["sentence"].count("$OCCUPATION")
    if occupations != 1:
        raise UserError(f"{where}: field 'sentence' must hold exactly one $OCCUPATION slot (the protected "
                        f"feature), found {occupations}")
    male, female = PRONOUNS[kinds[0]]
    options = [male, female]
    rng.shuffle(options)
    stereo = female if t["pct_female"] > 50 else male
    sentence = (
        t["sentence"]
        .replace(f"${kinds[0]}_PRONOUN", "[MASK]")
        .replace("$PARTICIPANT", t["participant"])
        .replace("$OCCUPATION", "{{source:occupation}}")
    )
    template = fill(load_prompt("biasqa_query"), {
        "sentence": sentence,
        "options": format_options(options),
        "instruction": "{{source:instruction}}",
    })
    return finish_row(
        {
            "id": f"biasqa-{t['occupation']}-{t['participant']}-{index:04d}".replace(" ", "_"),
            "unit_id": t["occupation"],
            "split": unit_split(t["occupation"]),
            "task": "biasqa",
            "system": load_prompt("biasqa_system"),
            "template": template,
            "sources": [
                source("occupation", "ground", t["occupation"], "person", True),
                source("instruction", "norm", load_prompt("biasqa_instruction"), "", False),
            ],
            "answer": options.index(stereo),
            "options": options,
            "category": f"{t['referent']}-referent/{'female' if stereo == female else 'male'}-stereotype",
        }
    )


def build(cfg: TaskConfig) -> list[dict[str, Any]]:
    rng = random.Random(f"biasqa/{cfg.seed}")
    tsv = Path(cfg.data_dir or "") / "templates.tsv"  # one template per data row, in file order
    rows = [
        build_example(t, i, rng, f"synthetic template {i + 1}" if cfg.source == "synthetic" else f"{tsv} row {i + 2}")
        for i, t in enumerate(load_templates(cfg))
    ]
    out = []
    for split in cfg.splits:
        chosen = [r for r in rows if r["split"] == split]
        random.Random(f"biasqa/{cfg.seed}/{split}").shuffle(chosen)
        n = cfg.examples(split)
        out.extend(chosen if n == 0 else chosen[:n])
    return out
