"""The strategy table: which reward variant uses the acknowledgment-appended score, and when.

Read by `alignment score` (final rewards), `alignment bon` and `alignment dpo-pairs` (which
variants exist), `alignment dpo-eval` (table order) and `alignment report` (augmented shares).
Adding a strategy is one row here. `draw_counterfactual` is the one seeded draw of the
counterfactual response an original response is compared with; `attribute` and the receipts
runner both call it, so strategy D's cell in a receipt cube is D's own draw.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pandas as pd


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
)
BY_VARIANT = {s.variant: s for s in STRATEGIES}
PLAIN = "rm"
# The variants every run has, and the one that exists only with `attribution.receipts: true`.
REWARD_VARIANTS: tuple[str, ...] = tuple(s.variant for s in STRATEGIES if not s.receipts)
RECEIPT_VARIANT = "rm_receipt"
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
    """Add one column per strategy from `reward_plain`, `reward_augmented` (and `reward_receipt`)
    and the attribution columns; a variant whose inputs are absent is left out.

    >>> df = pd.DataFrame({"reward_plain": [1.0, 1.0], "reward_augmented": [3.0, 3.0],
    ...                    "d": [True, False], "c": [False, False], "p_d": [0.5, 0.0], "p_c": [0.0, 0.0]})
    >>> final_rewards(df)[["rm", "rm_d", "rm_d_expected"]].values.tolist()
    [[1.0, 3.0, 2.0], [1.0, 1.0, 1.0]]
    """
    plain, aug = df["reward_plain"], df["reward_augmented"].fillna(df["reward_plain"])
    for s in STRATEGIES:
        if s.receipts:
            if "reward_receipt" in df.columns:
                df[s.variant] = df["reward_receipt"].fillna(plain)
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
    """
    s = BY_VARIANT[variant]
    if s.flag is None or s.flag not in attrib.columns or attrib.empty:
        return 0.0
    col = attrib[s.flag]
    if s.receipts:  # a receipt is a list of accounts; non-empty = something changed
        return float(np.mean([len(r) > 0 for r in col]))
    return float(col.astype(float).mean())
