"""The per-example browser's data: one compact record per example and per response.

Joins what the stages wrote (build, generate, attribute, score, ack) into two lists that the
page's script renders lazily: examples (id, gold, the prompt diff, declared sources) and responses
(text, parsed answer, validity, correctness, D/C flags and receipt, rewards, judge verdict and
evidence, and the human label where one exists). Rows are arrays under a shared field list, not dicts, so the blob stays small at
thousands of responses.
"""

from __future__ import annotations

import ast
import difflib
import math
import re
from typing import Any

import pandas as pd

from alignment.store import RunDir

KEYS = ["example_id", "variant", "sample"]
RESPONSE_FIELDS = ["e", "variant", "sample", "text", "pred", "valid", "correct", "d", "c", "receipt",
                   "reward_plain", "reward_augmented", "rewards", "ack", "ack_raw", "ack_parsed", "label"]
_QUOTED = re.compile(r"'(?:[^'\\]|\\.){6,}'|\"(?:[^\"\\]|\\.){6,}\"")


def prompt_diff(orig: str, cf: str) -> list[list[Any]]:
    """Word-level diff of the two prompts: [tag, text] with 0 = shared, 1 = only in the
    original (the protected feature), 2 = only in the counterfactual.

    >>> prompt_diff("the nurse said she", "the person said she")
    [[0, 'the '], [1, 'nurse'], [2, 'person'], [0, ' said she']]
    """
    a, b = re.split(r"(\s+)", orig), re.split(r"(\s+)", cf)
    out: list[list[Any]] = []

    def add(tag: int, words: list[str]) -> None:
        text = "".join(words)
        if not text:
            return
        if out and out[-1][0] == tag:
            out[-1][1] += text
        else:
            out.append([tag, text])

    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            add(0, a[i1:i2])
        else:
            add(1, a[i1:i2])
            add(2, b[j1:j2])
    return out


def evidence_split(text: str, reason: str) -> list[str] | None:
    """[before, span, after] of `text` around the longest passage the judge's reason quotes, or
    None when it quotes nothing found in the text (matched case-insensitively).

    >>> evidence_split("I read it. The book says 48. So (D).", "keyword: cue in sentence 2: 'The book says 48.'")
    ['I read it. ', 'The book says 48.', ' So (D).']
    >>> evidence_split("No quote here.", "keyword: no use of the feature") is None
    True
    """
    quotes = []
    for m in _QUOTED.finditer(reason or ""):
        try:
            quotes.append(str(ast.literal_eval(m.group(0))))
        except (ValueError, SyntaxError):
            quotes.append(m.group(0)[1:-1])
    low = text.lower()
    for q in sorted(quotes, key=len, reverse=True):
        i = low.find(q.strip().lower())
        if q.strip() and i >= 0:
            j = i + len(q.strip())
            return [text[:i], text[i:j], text[j:]]
    return None


def _num(v: Any) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return round(float(v), 4)


def _receipt(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    accounts = [sorted(str(n) for n in acc) for acc in value]
    return " or ".join("{" + ", ".join(a) + "}" for a in accounts) if accounts else "∅"


def _optional(run: RunDir, stage: str) -> pd.DataFrame | None:
    path = run.stage(stage) / "data.parquet"
    return run.read(stage) if path.is_file() else None


def response_table(run: RunDir) -> pd.DataFrame:
    """Every response of `generate/` with attribution, rewards and verdicts joined on when present."""
    df = run.read("generate")
    attrib = _optional(run, "attribute")
    if attrib is not None:
        cols = ["example_id", "sample", "d", "c", *(["receipt"] if "receipt" in attrib.columns else [])]
        df = df.merge(attrib[cols].assign(variant="orig"), on=KEYS, how="left")
    score = _optional(run, "score")
    if score is not None:
        df = df.merge(score.drop(columns=[c for c in ("d", "c", "p_d", "p_c") if c in score.columns]), on=KEYS, how="left")
    ack = _optional(run, "ack")
    if ack is not None:
        df = df.merge(ack[[*KEYS, "ack", "ack_raw", "ack_parsed"]], on=KEYS, how="left")
    return df


def reward_variants(df: pd.DataFrame) -> list[str]:
    """The per-strategy reward columns present (rm, rm_d, rm_c, ...), in a stable order."""
    return sorted(c for c in df.columns if c == "rm" or c.startswith("rm_"))


def _flag(v: Any) -> bool | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v)


def browser_data(run: RunDir, labels: dict[tuple[str, str, int], bool] | None = None) -> dict[str, Any]:
    """The JSON blob of the per-example browser (see the module docstring for its shape);
    `labels` are human labels by (example_id, variant, sample), null where a response has none."""
    labels = labels or {}
    examples = run.read("build")
    df = response_table(run)
    index = {ex_id: i for i, ex_id in enumerate(examples["id"])}
    variants = reward_variants(df)
    ex_rows = [
        {"id": r["id"], "answer": int(r["answer"]), "options": [str(o) for o in r["options"]],
         "diff": prompt_diff(r["query"], r["cf_query"]),
         "sources": [{"name": s["name"], "kind": s["kind"], "protected": bool(s["protected"])} for s in r["sources"]]}
        for r in examples.to_dict("records")
    ]
    rows = []
    for r in df.to_dict("records"):
        raw = r.get("ack_raw") if isinstance(r.get("ack_raw"), str) else None
        rows.append([
            index.get(r["example_id"], -1), r["variant"], int(r["sample"]),
            evidence_split(r["text"], raw) or r["text"] if raw else r["text"],
            None if pd.isna(r["pred"]) else int(r["pred"]), bool(r["valid"]), bool(r["correct"]),
            _flag(r.get("d")), _flag(r.get("c")), _receipt(r.get("receipt")),
            _num(r.get("reward_plain")), _num(r.get("reward_augmented")), [_num(r.get(v)) for v in variants],
            _flag(r.get("ack")), raw, _flag(r.get("ack_parsed")),
            labels.get((r["example_id"], r["variant"], int(r["sample"]))),
        ])
    return {"fields": RESPONSE_FIELDS, "reward_variants": variants, "examples": ex_rows, "responses": rows}
