"""Judgment cubes and receipts: exact minimal accounts of a judgment change, certified by execution.

`from alignment.receipts import receipt_family, execute_cube, certify`

`verdict_of(T)` returns the verdict of the hybrid whose sources in `T` take their new values
(`frozenset()` is the old state, all sources the new state). It is memoised here, so each hybrid
is executed at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
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


def _check_sources(sources: Iterable[str]) -> tuple[str, ...]:
    srcs = tuple(sources)
    if len(set(srcs)) != len(srcs):
        raise UserError(f"sources must be distinct, got {list(srcs)}")
    if len(srcs) > MAX_SOURCES:
        raise UserError(
            f"{len(srcs)} sources: exact receipts need up to 2^k executions; at most "
            f"{MAX_SOURCES} sources are supported"
        )
    return srcs


def _family(srcs: tuple[str, ...], memo: _Memo) -> Family:
    """Enumerate subsets by size; a subset is minimal iff it reproduces the new verdict and
    contains no smaller reproducing subset. Supersets of found accounts are never executed."""
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
    srcs = _check_sources(sources)
    return _family(srcs, _Memo(verdict_of))


@dataclass
class Cube:
    """Executed hybrids (`cells`), the receipt derived from them, and how many executions it took."""

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
    """
    srcs = _check_sources(sources)
    memo = _Memo(verdict_of)
    family = _family(srcs, memo)
    if full:
        for size in range(len(srcs) + 1):
            for combo in combinations(srcs, size):
                memo(frozenset(combo))
    complete = memo.executions == 2 ** len(srcs)
    return Cube(srcs, dict(memo.cells), family, memo.executions, complete)


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
