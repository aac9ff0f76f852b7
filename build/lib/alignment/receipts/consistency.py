"""Paired consistency: meaning-preserving transformations of a case and the relations they impose.

Build controls with `permute(case, order)`, `add_distractor(case, source, inject)` and
`invert(case)`; check gold controls by execution with `audit_control`; score a predictor with
`paired_consistency([Pair(kind, base_prediction, control_prediction, sources), ...])`.

A `Case` is a transition old -> new over declared sources (state dicts keyed by source) with a
trusted `adjudicate(state) -> verdict`. The hybrid for `T` takes `new[s]` for `s in T`, else
`old[s]`; write `v(T)` for its verdict and `S` for the set of all sources.

Relations (each holds for gold, so a pair of predictions violating it contains a wrong one):

* Permutation (same sources, another presentation order) and distractor (irrelevant content
  injected into both states): same hybrids, same verdicts. Endpoints, cells and the receipt
  family (as a set of source-name sets) must be *identical*.
* Inverse (new -> old). The inverse hybrid for `T` takes the *old* value for `s in T` and the new
  one elsewhere, i.e. it is the original hybrid for `S \\ T`. Hence, exactly,

      v_inv(T) = v(S \\ T)          (the inverse cube is the original cube read complemented)
      old_inv = v(S) = new,  new_inv = v(∅) = old
      R_inv = min { T ≠ ∅ : v(S \\ T) = old }.

  So a predicted cube determines its inverse cube (`invert_cells`) and receipt (`inverse_receipt`).
  A predicted *receipt* does not determine the inverse receipt in general, because receipts do
  not fix the other cells. What a receipt pair must satisfy depends on what the adjudicator may
  do (`assume`); each check below is exact: a pair passes iff some adjudicator of that class
  yields both receipts, so no check is weaker than the class allows.

  - ``"any"`` (three or more verdict values possible): both families well formed, both empty or
    both non-empty, and no account `A` in R with `S \\ A` in R_inv (that hybrid would have to
    give both the new and the old verdict).
  - ``"binary"`` (every hybrid gives the old or the new verdict): additionally, for every
    `X ⊆ S`, `X` contains an account of R or `S \\ X` contains an account of R_inv (a new-verdict
    `X` contains a minimal one; an old-verdict `X` makes `S \\ X` reproduce the inverse's new
    verdict).
  - ``"monotone"`` (binary, and any superset of a reproducing set reproduces, e.g. positive-rule
    worlds): `R_inv` is the *blocker* of R, the family of minimal sets meeting every account
    (`blocker`). E.g. R = {{G}, {N}} gives R_inv = {{G, N}}, and conversely.

Error bound. Each violated pair holds at least one wrong prediction. When each control
prediction sits in one pair (bases may be shared, marked by `base_id`), violated pairs sharing a
base form disjoint stars, so at least `min_wrong` = number of distinct bases with a violation
predictions are wrong; `error_lower_bound = min_wrong / predictions` bounds the error rate over
all distinct predictions involved. For disjoint pairs this is `violations / (2 · pairs)` =
`(1 − consistency) / 2`, a bound on the mean of the base and control error rates. The bound is
tight only in the worst case; consistent pairs may still both be wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import combinations
from typing import Literal

from alignment.errors import UserError
from alignment.receipts.cube import (
    Cube,
    Family,
    Verdict,
    cell_order,
    check_sources,
    execute_cube,
    receipt_from_cells,
)
from alignment.receipts.prediction import Prediction, well_formed

Assumption = Literal["any", "binary", "monotone"]


class Transformation(StrEnum):
    PERMUTATION = "permutation"
    DISTRACTOR = "distractor"
    INVERSE = "inverse"


@dataclass(frozen=True)
class Case:
    """A transition between two evaluator states over the same declared sources.

    The key order of `old` is the presentation order; `adjudicate` must not depend on it.
    """

    old: Mapping[Hashable, object]
    new: Mapping[Hashable, object]
    adjudicate: Callable[[Mapping[Hashable, object]], Verdict]

    def __post_init__(self) -> None:
        if set(self.old) != set(self.new):
            raise UserError(
                f"old and new states must declare the same sources: {sorted(map(str, self.old))}"
                f" vs {sorted(map(str, self.new))}"
            )
        check_sources(self.old)
        object.__setattr__(self, "old", dict(self.old))
        object.__setattr__(self, "new", {s: self.new[s] for s in self.old})

    @property
    def sources(self) -> tuple[Hashable, ...]:
        return tuple(self.old)

    def hybrid(self, replaced: frozenset[Hashable]) -> dict[Hashable, object]:
        return {s: (self.new[s] if s in replaced else self.old[s]) for s in self.old}

    def verdict_of(self, replaced: frozenset[Hashable]) -> Verdict:
        return self.adjudicate(self.hybrid(replaced))

    def cube(self, full: bool = False) -> Cube:
        return execute_cube(self.sources, self.verdict_of, full=full)


def permute(case: Case, order: Sequence[Hashable]) -> Case:
    """The same case with its sources presented in `order`."""
    if len(order) != len(case.sources) or set(order) != set(case.sources):
        raise UserError(f"order {list(order)} is not a permutation of {list(case.sources)}")
    return Case({s: case.old[s] for s in order}, {s: case.new[s] for s in order}, case.adjudicate)


def add_distractor(
    case: Case,
    source: Hashable,
    inject: Callable[[object], object],
    verify: bool = True,
) -> Case:
    """Inject irrelevant content into `source` in both states (`inject(value) -> value`).

    With `verify`, both full cubes are executed and a distractor that changes any hybrid's
    verdict is rejected: irrelevance is certified, not assumed.
    """
    if source not in case.old:
        raise UserError(f"unknown source {source!r}; declared: {list(case.sources)}")
    old = {**case.old, source: inject(case.old[source])}
    new = {**case.new, source: inject(case.new[source])}
    out = Case(old, new, case.adjudicate)
    if verify and not audit_control(case, out, Transformation.DISTRACTOR):
        raise UserError(f"the distractor on {source!r} changes a hybrid's verdict")
    return out


def invert(case: Case) -> Case:
    """The inverse transition new -> old."""
    return Case(case.new, case.old, case.adjudicate)


def invert_cells(
    cells: Mapping[frozenset[Hashable], Verdict], sources: Iterable[Hashable]
) -> dict[frozenset[Hashable], Verdict]:
    """The inverse transition's cube: cell `T` is the original cell `S \\ T`.

    >>> cells = {frozenset(): "deny", frozenset("G"): "approve"}
    >>> invert_cells(cells, "G") == {frozenset(): "approve", frozenset("G"): "deny"}
    True
    """
    everything = frozenset(check_sources(sources))
    return {everything - t: v for t, v in cells.items()}


def inverse_receipt(
    cells: Mapping[frozenset[Hashable], Verdict], sources: Iterable[Hashable]
) -> Family:
    """The inverse transition's receipt, read off a complete cube: min {T : v(S \\ T) = old}.

    >>> cells = {frozenset(): 0, frozenset("G"): 1, frozenset("N"): 1, frozenset("GN"): 1}
    >>> sorted(sorted(t) for t in inverse_receipt(cells, "GN"))
    [['G', 'N']]
    """
    srcs = check_sources(sources)
    return receipt_from_cells(invert_cells(cells, srcs), srcs)


def blocker(family: Family, sources: Iterable[Hashable]) -> Family:
    """Minimal non-empty sets meeting every account: the inverse receipt of a monotone binary case.

    Empty for an empty family (no change stays no change).

    >>> sorted(sorted(t) for t in blocker(frozenset({frozenset("G"), frozenset("N")}), "GN"))
    [['G', 'N']]
    >>> sorted(sorted(t) for t in blocker(frozenset({frozenset("GN")}), "GN"))
    [['G'], ['N']]
    """
    srcs = check_sources(sources)
    if not family:
        return frozenset()
    found: list[frozenset[Hashable]] = []
    for size in range(1, len(srcs) + 1):
        for combo in combinations(srcs, size):
            t = frozenset(combo)
            if not any(f <= t for f in found) and all(t & a for a in family):
                found.append(t)
    return frozenset(found)


def _contains_account(x: frozenset[Hashable], family: Family) -> bool:
    return any(a <= x for a in family)


def inverse_receipts_compatible(
    receipt: Family, inverse: Family, sources: Iterable[Hashable], assume: Assumption = "any"
) -> bool:
    """Whether some adjudicator of class `assume` has receipt `receipt` and inverse `inverse`.

    >>> g, n, gn = frozenset("G"), frozenset("N"), frozenset("GN")
    >>> inverse_receipts_compatible(frozenset({g, n}), frozenset({gn}), "GN", "monotone")
    True
    >>> inverse_receipts_compatible(frozenset({g}), frozenset({n}), "GN", "binary")
    False
    """
    srcs = check_sources(sources)
    everything = frozenset(srcs)
    if not (well_formed(receipt, srcs) and well_formed(inverse, srcs)):
        return False
    if bool(receipt) != bool(inverse):
        return False
    if not receipt:
        return True
    if assume == "monotone":
        return inverse == blocker(receipt, srcs)
    if any(everything - a in inverse for a in receipt):
        return False
    if assume == "any":
        return True
    if assume != "binary":
        raise UserError(f"unknown assumption {assume!r}; use 'any', 'binary' or 'monotone'")
    return all(
        _contains_account(x, receipt) or _contains_account(everything - x, inverse)
        for x in cell_order(srcs)
    )


def audit_control(base: Case, control: Case, kind: Transformation | str) -> bool:
    """Execute both full cubes and check the gold relation of a control against its base."""
    kind = Transformation(kind)
    if set(base.sources) != set(control.sources):
        return False
    a = base.cube(full=True).cells
    b = control.cube(full=True).cells
    if kind is Transformation.INVERSE:
        a = invert_cells(a, base.sources)
    return a == b


def _same(x: object, y: object) -> bool | None:
    return None if x is None or y is None else x == y


def relation_holds(
    kind: Transformation | str,
    base: Prediction,
    control: Prediction,
    sources: Iterable[Hashable],
    assume: Assumption = "any",
) -> bool:
    """Whether two predictions satisfy the relation of `kind` on every field both carry."""
    kind = Transformation(kind)
    srcs = check_sources(sources)
    checks: list[bool | None]
    if kind is Transformation.INVERSE:
        cells = None
        if base.cells is not None and control.cells is not None:
            cells = invert_cells(base.cells, srcs) == dict(control.cells)
        receipts = None
        if base.receipt is not None and control.receipt is not None:
            receipts = inverse_receipts_compatible(base.receipt, control.receipt, srcs, assume)
        checks = [_same(base.old, control.new), _same(base.new, control.old), cells, receipts]
    else:
        cells = None
        if base.cells is not None and control.cells is not None:
            cells = dict(base.cells) == dict(control.cells)
        checks = [
            _same(base.old, control.old),
            _same(base.new, control.new),
            _same(base.receipt, control.receipt),
            cells,
        ]
    compared = [c for c in checks if c is not None]
    if not compared:
        raise UserError("the two predictions share no field (old, new, receipt, cells) to compare")
    return all(compared)


@dataclass(frozen=True)
class Pair:
    """A base prediction and the prediction on one of its controls."""

    kind: Transformation | str
    base: Prediction
    control: Prediction
    sources: tuple[Hashable, ...]
    base_id: Hashable | None = None
    assume: Assumption = "any"


@dataclass(frozen=True)
class ConsistencyReport:
    pairs: int
    violations: int
    consistency: float
    min_wrong: int
    predictions: int
    error_lower_bound: float


def paired_consistency(pairs: Iterable[Pair]) -> ConsistencyReport:
    """Share of pairs obeying their relation, and the error it implies (see the module docstring).

    >>> g = Prediction(old="deny", new="approve", receipt=[["G"]])
    >>> n = Prediction(old="deny", new="approve", receipt=[["N"]])
    >>> r = paired_consistency([Pair("permutation", g, g, ("G", "N")),
    ...                         Pair("permutation", g, n, ("G", "N"))])
    >>> r.consistency, r.min_wrong, r.error_lower_bound
    (0.5, 1, 0.25)
    """
    n = violations = 0
    bases: set[object] = set()
    violated: set[object] = set()
    for i, pair in enumerate(pairs):
        key = ("id", pair.base_id) if pair.base_id is not None else ("pair", i)
        bases.add(key)
        n += 1
        if not relation_holds(pair.kind, pair.base, pair.control, pair.sources, pair.assume):
            violations += 1
            violated.add(key)
    predictions = len(bases) + n
    return ConsistencyReport(
        pairs=n,
        violations=violations,
        consistency=1 - violations / n if n else float("nan"),
        min_wrong=len(violated),
        predictions=predictions,
        error_lower_bound=len(violated) / predictions if predictions else float("nan"),
    )


def consistency_by_kind(pairs: Iterable[Pair]) -> dict[str, ConsistencyReport]:
    """`paired_consistency` separately for each transformation kind."""
    grouped: dict[str, list[Pair]] = {}
    for pair in pairs:
        grouped.setdefault(str(Transformation(pair.kind)), []).append(pair)
    return {kind: paired_consistency(group) for kind, group in grouped.items()}
