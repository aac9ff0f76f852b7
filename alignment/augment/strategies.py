"""The strategy table: which reward variant uses the acknowledgment-appended score, and when.

Read by `alignment score` (final rewards), `alignment bon` and `alignment dpo-pairs` (which
variants exist), `alignment dpo-eval` (table order) and `alignment report` (augmented shares).
Adding a strategy is one row here. `draw_counterfactual` is the one seeded draw of the
counterfactual response an original response is compared with; `attribute` and the receipts
runner both call it, so strategy D's cell in a receipt cube is D's own draw.

Two-sided strategies (`rm_d_deny`, `rm_c_deny`) also price acknowledgment that is not true. Where
D / C fires on an original response they take the augmented score, exactly as `rm_d` / `rm_c`;
everywhere else — original responses the feature did not cause, and every counterfactual
response, whose prompt lacks the feature — they take min(plain, denied), `denied` being the
reward model's score with the task's denial sentence appended (`Task.deny_suffix`). A response
that claims the feature contradicts the appended denial, which a reward model that rewards
consistency with the reasoning scores lower, so a fabricated acknowledgment costs reward; one that
does not claim it keeps its plain score; and the minimum stops a reward model that likes denials
as such from turning the denial into a bonus. Nothing else detects acknowledgment at training time:
no judge or lexicon is consulted, the reward model is the only signal, so the judge that evaluates
acknowledgment (keyword or LLM) stays independent of what best-of-N and DPO optimise. With receipts
on, the flag is D's or C's own, unchanged; a receipt-worded two-sided variant (deny exactly the
sources a receipt leaves out) is a possible extension, not built.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from alignment.errors import UserError


@dataclass(frozen=True)
class Strategy:
    """One reward variant: `variant` is its reward column, `flag` the attribution column that
    switches to the augmented score (None: never), `expected` makes that column a weight p
    (p·augmented + (1 − p)·plain), `receipts` marks a variant that needs the receipts stage, and
    `two_sided` one that also scores counterfactual-prompt responses (and original ones the
    feature did not cause) with the task's denial appended, and takes DPO pairs and best-of-N
    picks from both prompt types."""

    variant: str
    flag: str | None
    expected: bool = False
    receipts: bool = False
    two_sided: bool = False
    doc: str = ""


# rm_d / rm_c: the reward model's score (rm) plus the acknowledgment score where flag D / C fires.
STRATEGIES: tuple[Strategy, ...] = (
    Strategy("rm", None, doc="plain reward model score, never augmented"),
    Strategy("rm_d", "d", doc="augmented where the answer differs from the drawn counterfactual (D)"),
    Strategy("rm_c", "c", doc="augmented where the original is correct and the drawn counterfactual not (C)"),
    Strategy("rm_d_expected", "p_d", expected=True, doc="D averaged over every counterfactual sample"),
    Strategy("rm_c_expected", "p_c", expected=True, doc="C averaged over every counterfactual sample"),
    Strategy("rm_receipt", "receipt", receipts=True,
             doc="augmented by a disclaimer naming exactly the receipt's sources (receipts on)"),
    Strategy("rm_d_deny", "d", two_sided=True,
             doc="D's augmented score where D fires; elsewhere, counterfactual prompts included, min(plain, denial appended)"),
    Strategy("rm_c_deny", "c", two_sided=True,
             doc="C's augmented score where C fires; elsewhere, counterfactual prompts included, min(plain, denial appended)"),
)
BY_VARIANT = {s.variant: s for s in STRATEGIES}
PLAIN = "rm"
# The variants every run has (equal to the plain score on counterfactual prompts), the one that
# exists only with `attribution.receipts: true`, and those that exist where the task has a denial
# sentence (`prompts/<task>_deny.txt`).
REWARD_VARIANTS: tuple[str, ...] = tuple(s.variant for s in STRATEGIES if not s.receipts and not s.two_sided)
RECEIPT_VARIANT = "rm_receipt"
TWO_SIDED_VARIANTS: tuple[str, ...] = tuple(s.variant for s in STRATEGIES if s.two_sided)
# Each two-sided variant's one-sided counterpart (same flag), the comparison that isolates the denial.
ONE_SIDED: dict[str, str] = {
    s.variant: next(o.variant for o in STRATEGIES if o.flag == s.flag and not (o.two_sided or o.expected or o.receipts))
    for s in STRATEGIES if s.two_sided
}
# Readable names for tables and figures.
LABELS = {"rm": "RM", "rm_d": "RM_D", "rm_c": "RM_C", "rm_d_expected": "RM_D (expected)", "rm_c_expected": "RM_C (expected)",
          "rm_receipt": "RM_receipt", "rm_d_deny": "RM_D±", "rm_c_deny": "RM_C±"}
ALL_VARIANTS: tuple[str, ...] = tuple(s.variant for s in STRATEGIES)
# Report and table order: the untrained base policy first, then the table's order.
ORDER = {"base": 0, **{s.variant: i + 1 for i, s in enumerate(STRATEGIES)}}


def draw_counterfactual(seed: int, example_id: str, sample: int | None, n: int, cell: str | None = None) -> int:
    """Index (in sample order) of the counterfactual response drawn for one original response;
    `sample` None is the one draw per prompt (every original response of the example compared
    with the same counterfactual response), an index a fresh draw for that response.

    `cell` names a receipts hybrid other than the protected singleton; None is strategy D's draw.

    >>> draw_counterfactual(0, "ex-1", 2, 4) == draw_counterfactual(0, "ex-1", 2, 4)
    True
    >>> 0 <= draw_counterfactual(0, "ex-1", 2, 4, cell="instruction") < 4
    True
    """
    tag = f"attribute/{seed}/{example_id}" + ("" if sample is None else f"/{sample}")
    return random.Random(tag if cell is None else f"{tag}/{cell}").randrange(n)


def final_rewards(df: pd.DataFrame) -> pd.DataFrame:
    """Add one column per strategy from `reward_plain`, `reward_augmented` (and `reward_receipt`,
    `reward_denied`) and the attribution columns (flags already False on counterfactual rows); a
    variant whose inputs are absent (or all NaN) is left out.

    >>> df = pd.DataFrame({"reward_plain": [1.0, 1.0], "reward_augmented": [3.0, 3.0],
    ...                    "d": [True, False], "c": [False, False], "p_d": [0.5, 0.0], "p_c": [0.0, 0.0]})
    >>> final_rewards(df)[["rm", "rm_d", "rm_d_expected"]].values.tolist()
    [[1.0, 3.0, 2.0], [1.0, 1.0, 1.0]]

    Two-sided: D fired (augmented), not fired with the denial scored lower / higher than plain
    (the lower one), and a counterfactual row (no augmented score, D never fires there):

    >>> df = pd.DataFrame({"reward_plain": [1.0, 1.0, 1.0, 2.0], "reward_augmented": [3.0, 3.0, 3.0, np.nan],
    ...                    "reward_denied": [0.0, -1.0, 4.0, 0.5], "d": [True, False, False, False],
    ...                    "c": [False] * 4, "p_d": [1.0, 0.0, 0.0, 0.0], "p_c": [0.0] * 4})
    >>> final_rewards(df)[["rm_d", "rm_d_deny"]].values.tolist()
    [[3.0, 3.0], [1.0, -1.0], [1.0, 1.0], [2.0, 0.5]]
    """
    plain, aug = df["reward_plain"], df["reward_augmented"].fillna(df["reward_plain"])
    denied = df["reward_denied"] if "reward_denied" in df.columns else None
    for s in STRATEGIES:
        if s.receipts:
            if "reward_receipt" in df.columns:
                df[s.variant] = df["reward_receipt"].fillna(plain)
        elif s.two_sided:
            if denied is not None and denied.notna().any():
                df[s.variant] = np.where(df[s.flag], aug, np.minimum(plain, denied.fillna(plain)))
        elif s.flag is None:
            df[s.variant] = plain
        elif s.expected:
            df[s.variant] = df[s.flag] * aug + (1 - df[s.flag]) * plain
        else:
            df[s.variant] = np.where(df[s.flag], aug, plain)
    return df


def augmented_share(attrib: pd.DataFrame, variant: str) -> float:
    """Share of responses whose reward used the augmented score (mean weight for expected ones).

    >>> augmented_share(pd.DataFrame({"d": [True, False], "receipt": [[["g"]], []]}), "rm_d")
    0.5
    >>> augmented_share(pd.DataFrame({"receipt": [[["g"]], []]}), "rm_receipt")
    0.5

    A two-sided variant augments exactly where its one-sided flag fires (elsewhere it may deny):

    >>> augmented_share(pd.DataFrame({"d": [True, False, False, False]}), "rm_d_deny")
    0.25
    """
    s = BY_VARIANT[variant]
    if s.flag is None or s.flag not in attrib.columns or attrib.empty:
        return 0.0
    col = attrib[s.flag]
    if s.receipts:  # a receipt is a list of accounts; non-empty = something changed
        return float(np.mean([len(r) > 0 for r in col]))
    return float(col.astype(float).mean())


def check_two_sided(requested: Iterable[str], scores: pd.DataFrame, deny_suffix: Callable[[], str], field: str) -> None:
    """Fail with one line when a requested two-sided variant has no reward in `scores`: naming
    the task's missing denial file when that is why (`deny_suffix` raises it), else asking for a
    rerun of the score stage (a score written before the variant existed).

    >>> check_two_sided(["rm", "rm_d_deny"], pd.DataFrame({"rm_d_deny": [1.0]}), lambda: "x", "dpo.variants")
    >>> def missing() -> str:
    ...     raise UserError("missing prompt file prompts/t_deny.txt")
    >>> check_two_sided(["rm_d_deny"], pd.DataFrame({"rm": [1.0]}), missing, "dpo.variants")
    Traceback (most recent call last):
    alignment.errors.UserError: dpo.variants: rm_d_deny needs the task's denial sentence: missing prompt file prompts/t_deny.txt
    """
    missing = [v for v in requested if BY_VARIANT[v].two_sided and (v not in scores.columns or scores[v].isna().all())]
    if not missing:
        return
    try:
        deny_suffix()
    except UserError as e:
        raise UserError(f"{field}: {', '.join(missing)} needs the task's denial sentence: {e}") from None
    raise UserError(f"{field}: score/data.parquet has no {missing[0]!r} reward; rerun `alignment score`")
