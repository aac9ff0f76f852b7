"""Judgment cubes and receipts: exact minimal accounts of a judgment change, certified by execution.

`from alignment.receipts import receipt_family, execute_cube, certify`

`verdict_of(T)` returns the verdict of the hybrid whose sources in `T` take their new values
(`frozenset()` is the old state, all sources the new state). It is memoised here, so each hybrid
is executed at most once: exactly 2 executions when the endpoints agree, never more than 2^k.
Sources are any distinct hashable names (a string such as `"GNA"` is read as one source per
character); between 1 and `MAX_SOURCES` of them.

The receipt is the complete family of inclusion-minimal non-empty `T` whose hybrid reproduces the
new verdict, empty when the endpoints agree. Every minimal account is kept: if `{G}` and `{N}`
each suffice, both are in the family. A model's receipt or cube is a *prediction*; `certify` and
`certify_cube` settle it by executing hybrids through the trusted `verdict_of`, never by reading
the prediction's own cells. `receipt_from_cells` derives the receipt a (predicted) cube implies.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations

from alignment.errors import UserError

MAX_SOURCES = 12

Verdict = Hashable
Family = frozenset[frozenset[str]]


class _Memo:
    """Counts and caches executions of `verdict_of`."""

    def __init__(self, verdict_of: Callable[[frozenset[str]], Verdict]) -> None:
        self.fn = verdict_of
        self.cells: dict[frozenset[str], Verdict] = {}

    def __call__(self, subset: frozenset[str]) -> Verdict:
        if subset not in self.cells:
            self.cells[subset] = self.fn(subset)
        return self.cells[subset]

    @property
    def executions(self) -> int:
        return len(self.cells)


def check_sources(sources: Iterable[str]) -> tuple[str, ...]:
    """The declared sources as a tuple; a UserError unless 1..MAX_SOURCES distinct names."""
    srcs = tuple(sources)
    if not srcs:
        raise UserError("a judgment cube needs at least one declared source, got none")
    if len(set(srcs)) != len(srcs):
        raise UserError(f"sources must be distinct, got {list(srcs)}")
    if len(srcs) > MAX_SOURCES:
        raise UserError(
            f"{len(srcs)} sources: exact receipts need up to 2^k executions; at most "
            f"{MAX_SOURCES} sources are supported"
        )
    return srcs


def cell_order(sources: Iterable[str]) -> list[frozenset[str]]:
    """All 2^k hybrids in the canonical order: by size, then by the sources' declared order.

    >>> [''.join(sorted(t, key="GNA".index)) for t in cell_order("GNA")]
    ['', 'G', 'N', 'A', 'GN', 'GA', 'NA', 'GNA']
    """
    srcs = check_sources(sources)
    return [frozenset(c) for size in range(len(srcs) + 1) for c in combinations(srcs, size)]


def _family(srcs: tuple[str, ...], memo: Callable[[frozenset[str]], Verdict]) -> Family:
    """Enumerate subsets by size; a subset is minimal iff it reproduces the new verdict and
    contains no smaller reproducing subset. Supersets of found accounts are never executed,
    because their verdict cannot change minimality."""
    everything = frozenset(srcs)
    old, new = memo(frozenset()), memo(everything)
    if old == new:
        return frozenset()
    found: list[frozenset[str]] = []
    for size in range(1, len(srcs) + 1):
        for combo in combinations(srcs, size):
            t = frozenset(combo)
            if any(f <= t for f in found):
                continue
            if memo(t) == new:
                found.append(t)
    return frozenset(found)


def receipt_family(
    sources: Iterable[str], verdict_of: Callable[[frozenset[str]], Verdict]
) -> Family:
    """The complete family of inclusion-minimal non-empty source sets reproducing the new verdict.

    >>> v = {frozenset(): "deny", frozenset("G"): "approve", frozenset("N"): "approve",
    ...      frozenset("GN"): "approve"}
    >>> sorted(sorted(t) for t in receipt_family("GN", lambda t: v[t]))
    [['G'], ['N']]
    >>> receipt_family("GN", lambda t: "deny")
    frozenset()
    """
    srcs = check_sources(sources)
    return _family(srcs, _Memo(verdict_of))


@dataclass
class Cube:
    """Executed hybrids (`cells`), the receipt derived from them, and how many executions it took.

    `cells` holds only the hybrids that were executed unless `complete` is True (all 2^k).
    """

    sources: tuple[str, ...]
    cells: dict[frozenset[str], Verdict]
    receipt: Family
    executions: int
    complete: bool = field(default=False)

    @property
    def old(self) -> Verdict:
        return self.cells[frozenset()]

    @property
    def new(self) -> Verdict:
        return self.cells[frozenset(self.sources)]

    @property
    def changed(self) -> bool:
        return self.old != self.new


def execute_cube(
    sources: Iterable[str],
    verdict_of: Callable[[frozenset[str]], Verdict],
    full: bool = False,
) -> Cube:
    """Execute the hybrids needed for the exact receipt (`full=True`: all 2^k cells).

    Exactly 2 executions when the endpoints agree (and `full` is False); never more than 2^k.

    >>> cube = execute_cube("GN", lambda t: "approve" if "G" in t else "deny")
    >>> sorted(sorted(t) for t in cube.receipt), cube.executions
    ([['G']], 4)
    >>> execute_cube("GNA", lambda t: "deny").executions
    2
    """
    srcs = check_sources(sources)
    memo = _Memo(verdict_of)
    family = _family(srcs, memo)
    if full:
        for t in cell_order(srcs):
            memo(t)
    complete = memo.executions == 2 ** len(srcs)
    return Cube(srcs, dict(memo.cells), family, memo.executions, complete)


def receipt_from_cells(cells: Mapping[frozenset[str], Verdict], sources: Iterable[str]) -> Family:
    """The receipt a table of cells implies (e.g. a model's predicted cube); nothing is executed.

    A coherent derivation is not evidence the cells are right: that needs `certify_cube`.

    >>> cells = {frozenset(): 0, frozenset("G"): 1, frozenset("N"): 0, frozenset("GN"): 1}
    >>> sorted(sorted(t) for t in receipt_from_cells(cells, "GN"))
    [['G']]
    """
    srcs = check_sources(sources)

    def lookup(t: frozenset[str]) -> Verdict:
        if t not in cells:
            raise UserError(f"cube has no cell for hybrid {sorted(map(str, t))}")
        return cells[t]

    return _family(srcs, lookup)


def certify(
    predicted_family: Iterable[Iterable[str]],
    sources: Iterable[str],
    verdict_of: Callable[[frozenset[str]], Verdict],
) -> bool:
    """True iff the predicted family equals the exact family, established by executing hybrids.

    >>> certify([["G"]], "GN", lambda t: "approve" if "G" in t else "deny")
    True
    >>> certify([["G"], ["N"]], "GN", lambda t: "approve" if "G" in t else "deny")
    False
    """
    predicted = frozenset(frozenset(t) for t in predicted_family)
    return predicted == receipt_family(sources, verdict_of)


def certify_cube(
    predicted_cells: Mapping[frozenset[str], Verdict],
    sources: Iterable[str],
    verdict_of: Callable[[frozenset[str]], Verdict],
) -> bool:
    """True iff every one of the 2^k predicted cells matches its executed hybrid.

    The predicted cells are only compared, never used as verdicts; a missing cell fails.

    >>> truth = lambda t: "approve" if "G" in t else "deny"
    >>> certify_cube({t: truth(t) for t in cell_order("GN")}, "GN", truth)
    True
    >>> certify_cube({frozenset(): "deny", frozenset("GN"): "approve"}, "GN", truth)
    False
    """
    cube = execute_cube(sources, verdict_of, full=True)
    return len(predicted_cells) == len(cube.cells) and all(
        t in predicted_cells and predicted_cells[t] == v for t, v in cube.cells.items()
    )
