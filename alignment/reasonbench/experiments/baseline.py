"""`alignment reasonbench baseline DIR --kind majority|tfidf`: surface baselines on the locked test.

Both learners see only the case's `prompt` and train on the `train` split's main cases; they are
scored on the locked split (main cases, and each control type separately). Two targets, each its
own classifier: the revised verdict (`new_verdict`) and the exact receipt family (the whole
canonical family as one class, `none` when stable), so a receipt counts only when every minimal
account is right.

- `majority`: the most frequent training label of each target.
- `tfidf`: character n-gram TF-IDF (scikit-learn `TfidfVectorizer`, `char`, 2-5 grams across word boundaries,
  sublinear tf) and a linear SVM (`LinearSVC`), fitted once per target.

Writes `DIR/_baselines/<kind>.csv` and `.md` (the leading underscore keeps
`pandas.read_parquet(DIR)` from reading them): one row per group (overall, per
stratum, per minimum receipt size, changed vs stable, per control type) with its size and both
accuracies in percent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.errors import UserError
from alignment.reasonbench.benchmark.audit import load
from alignment.store import write_text

KINDS = ("majority", "tfidf")
TARGETS = {"verdict": "new_verdict", "receipt": "receipt_label"}


def receipt_label(receipt: object) -> str:
    """One class per receipt family.

    >>> receipt_label(["G", "NA"]), receipt_label([])
    ('G|NA', 'none')
    """
    keys = list(receipt)  # type: ignore[call-overload]
    return "|".join(keys) if keys else "none"


def _majority(train: list[str], test: list[str], labels: dict[str, list[str]]) -> dict[str, np.ndarray]:
    tops = {t: pd.Series(ys).value_counts().index[0] for t, ys in labels.items()}
    return {t: np.array([top] * len(test), dtype=object) for t, top in tops.items()}


def vectorizer(min_df: int = 3) -> Any:
    """The character n-gram TF-IDF of the surface baseline (also the experiments' `tfidf`)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(analyzer="char", ngram_range=(2, 5), sublinear_tf=True, min_df=min_df,
                           dtype=np.float32)  # fmt: skip


def svm(c: float = 0.5, seed: int = 0) -> Any:
    from sklearn.svm import LinearSVC

    return LinearSVC(C=c, random_state=seed)


def _tfidf(train: list[str], test: list[str], labels: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """One vectorizer fitted on the training prompts, one linear SVM per target."""
    vec = vectorizer()
    x_train, x_test = vec.fit_transform(train), vec.transform(test)
    return {t: svm().fit(x_train, ys).predict(x_test) for t, ys in labels.items()}


LEARNERS = {"majority": _majority, "tfidf": _tfidf}


def groups(test: pd.DataFrame) -> list[tuple[str, pd.Series]]:
    """(name, row mask) for every reported group of the locked split."""
    main = test["control_type"].isna()
    out = [("overall", main)]
    out += [(f"stratum={s}", main & (test["stratum"] == s)) for s in sorted(test["stratum"].unique())]
    sizes = sorted(test.loc[main, "min_receipt_size"].unique())
    out += [(f"min_receipt_size={int(k)}", main & (test["min_receipt_size"] == k)) for k in sizes]
    changed = test["old_verdict"] != test["new_verdict"]
    out += [("changed", main & changed), ("stable", main & ~changed)]
    out += [("ambiguous", main & test["ambiguous"].astype(bool))]
    for t in ("inverse", "permutation", "distractor"):
        out.append((f"control={t}", test["control_type"] == t))
    return out


def evaluate(df: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Train `kind` on the train split's main cases; accuracy table on the locked split."""
    if kind not in LEARNERS:
        raise UserError(f"--kind must be one of {', '.join(KINDS)}, got {kind!r}")
    df = df.assign(receipt_label=df["receipt"].map(receipt_label))
    train = df[(df["split"] == "train") & df["control_type"].isna()]
    test = df[df["split"] == "locked"].reset_index(drop=True)
    if train.empty or test.empty:
        raise UserError("the benchmark has no train or no locked rows")
    labels = {name: train[col].tolist() for name, col in TARGETS.items()}
    preds = LEARNERS[kind](train["prompt"].tolist(), test["prompt"].tolist(), labels)
    hits = {name: preds[name] == test[col].to_numpy() for name, col in TARGETS.items()}
    rows = []
    for name, mask in groups(test):
        m = mask.to_numpy()
        if m.any():
            rows.append({"group": name, "n": int(m.sum()),
                         **{f"{t}_acc": round(100 * float(h[m].mean()), 1) for t, h in hits.items()}})  # fmt: skip
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame, kind: str) -> str:
    head = f"| {kind} (train -> locked) | n | revised verdict % | exact receipt % |"
    lines = [head, "|---|---:|---:|---:|"]
    for r in table.itertuples():
        lines.append(f"| {r.group} | {r.n} | {r.verdict_acc:.1f} | {r.receipt_acc:.1f} |")
    return "\n".join(lines) + "\n"


def run_baseline(directory: Path, kind: str) -> pd.DataFrame:
    """Evaluate and write `_baselines/<kind>.csv` / `.md` under `directory`; returns the table."""
    table = evaluate(load(Path(directory)), kind)
    out = Path(directory) / "_baselines"
    write_text(out / f"{kind}.csv", table.to_csv(index=False))
    write_text(out / f"{kind}.md", to_markdown(table, kind))
    return table
