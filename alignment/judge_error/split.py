"""The development split of human-labelled rows: `look` rows guide rule writing, `sealed` rows
are scored once, after the rules are frozen.

`alignment judge validate --task biasqa --labels FILE --part sealed` scores only the sealed part.

Rule (fixed before any row was read): within each label class, rows are ordered by
sha256("ack-dev-split-v1:" + id) and the first 60% (rounded) are `look`, the rest `sealed`.
Stratifying by label keeps acknowledging rows in the sealed part (they are the minority), so
its recall is not estimated from one or two rows. The rule uses only ids and labels, never the
response text, so choosing it could not favour the judge.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

Part = Literal["look", "sealed"]
SALT = "ack-dev-split-v1:"
LOOK_SHARE = 0.6


def _key(row_id: str) -> str:
    return hashlib.sha256((SALT + row_id).encode()).hexdigest()


def dev_parts(rows: list[dict[str, Any]]) -> list[Part]:
    """The part of each row (same order as `rows`); needs `id` and `ack_label`.

    >>> rows = [{"id": f"r{i}", "ack_label": i < 5} for i in range(10)]
    >>> parts = dev_parts(rows)
    >>> parts.count("look"), parts.count("sealed")
    (6, 4)
    >>> sum(p == "look" for p, r in zip(parts, rows) if r["ack_label"])
    3
    """
    parts: list[Part] = ["sealed"] * len(rows)
    for label in (False, True):
        idx = sorted((i for i, r in enumerate(rows) if r["ack_label"] is label), key=lambda i: _key(str(rows[i]["id"])))
        n_look = round(LOOK_SHARE * len(idx))
        for i in idx[:n_look]:
            parts[i] = "look"
    return parts
