"""What a receipt predictor emitted for one case, in the form consistency and accounting read.

`Prediction(old=..., new=..., receipt=[["G"], ["N"]], confidence=0.9)`, or
`Prediction.from_cells(cells, sources)` for a model that predicts the whole cube (its receipt is
derived from its own cells). Every field is optional because targets differ (a direct-verdict
model has no receipt); checks use the fields both sides of a comparison carry. Gold outcomes are
executed `Cube`s, which expose the same `old`, `new` and `receipt`.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from alignment.errors import UserError
from alignment.receipts.cube import Family, Verdict, receipt_from_cells


class Outcome(Protocol):
    """Anything with endpoints and a receipt: an executed `Cube` or a `Prediction`."""

    @property
    def old(self) -> Verdict | None: ...

    @property
    def new(self) -> Verdict | None: ...

    @property
    def receipt(self) -> Family | None: ...


def as_family(accounts: Iterable[Iterable[Hashable]]) -> Family:
    """Normalise an iterable of accounts to a family (order and duplicates do not matter).

    >>> sorted(sorted(t) for t in as_family([("N", "G"), ["A"], ("G", "N")]))
    [['A'], ['G', 'N']]
    """
    if isinstance(accounts, str):
        raise UserError(f"a receipt is a collection of source sets, got the string {accounts!r}")
    return frozenset(frozenset(t) for t in accounts)


def well_formed(family: Family, sources: Iterable[Hashable]) -> bool:
    """True iff every account is a non-empty set of declared sources and none contains another.

    An ill-formed family cannot be any case's receipt, so it is wrong whatever the gold.

    >>> well_formed(as_family([["G"], ["N"]]), "GN")
    True
    >>> well_formed(as_family([["G"], ["G", "N"]]), "GN"), well_formed(as_family([[]]), "GN")
    (False, False)
    """
    universe = frozenset(sources)
    if any(not t or not t <= universe for t in family):
        return False
    return not any(a < b for a in family for b in family)


@dataclass(frozen=True)
class Prediction:
    """A model's endpoints, receipt and/or cube for one case, with an optional confidence."""

    old: Verdict | None = None
    new: Verdict | None = None
    receipt: Family | None = None
    cells: Mapping[frozenset[str], Verdict] | None = None
    confidence: float | None = None

    def __post_init__(self) -> None:
        if self.receipt is not None:
            object.__setattr__(self, "receipt", as_family(self.receipt))
        if self.confidence is not None and not math.isfinite(self.confidence):
            raise UserError(f"confidence must be a finite number, got {self.confidence!r}")

    @classmethod
    def from_cells(
        cls,
        cells: Mapping[frozenset[str], Verdict],
        sources: Iterable[str],
        confidence: float | None = None,
    ) -> Prediction:
        """A cube prediction: endpoints and receipt read off the predicted cells.

        >>> p = Prediction.from_cells({frozenset(): 0, frozenset("G"): 1}, "G")
        >>> p.old, p.new, p.changed
        (0, 1, True)
        """
        srcs = tuple(sources)
        receipt = receipt_from_cells(cells, srcs)
        return cls(
            old=cells[frozenset()],
            new=cells[frozenset(srcs)],
            receipt=receipt,
            cells=dict(cells),
            confidence=confidence,
        )

    @property
    def changed(self) -> bool:
        """Whether a change is claimed: a non-empty receipt, else differing endpoints.

        The receipt decides when present because it is the attribution that gets accepted.
        """
        return changed(self)


def changed(outcome: Outcome) -> bool:
    """Whether an outcome (gold cube or prediction) has a judgment change."""
    if outcome.receipt is not None:
        return bool(outcome.receipt)
    if outcome.old is None or outcome.new is None:
        raise UserError("cannot tell whether a change is predicted: no receipt and no endpoints")
    return outcome.old != outcome.new
