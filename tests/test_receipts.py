"""Receipts, cubes and certification against a brute-force reference on random verdict tables."""

from __future__ import annotations

import itertools
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment.errors import UserError
from alignment.receipts import (
    MAX_SOURCES,
    Family,
    cell_order,
    certify,
    certify_cube,
    execute_cube,
    receipt_family,
    receipt_from_cells,
)

SOURCES = "GNAXY"
FAST = settings(max_examples=150, deadline=None)

Table = dict[frozenset[str], object]


def brute_family(sources: str, table: Table) -> Family:
    """Reference: every non-empty reproducing subset, then keep those with no reproducing subset."""
    everything = frozenset(sources)
    old, new = table[frozenset()], table[everything]
    if old == new:
        return frozenset()
    hits = [t for t in table if t and table[t] == new]
    return frozenset(t for t in hits if not any(h < t for h in hits))


@st.composite
def tables(draw: st.DrawFn, max_k: int = 5, alphabet: int | None = None) -> tuple[str, Table]:
    k = draw(st.integers(1, max_k))
    n_values = alphabet if alphabet is not None else draw(st.integers(2, 3))
    sources = SOURCES[:k]
    cells = cell_order(sources)
    verdicts = draw(
        st.lists(st.integers(0, n_values - 1), min_size=len(cells), max_size=len(cells))
    )
    return sources, dict(zip(cells, verdicts, strict=True))


@st.composite
def monotone_tables(draw: st.DrawFn) -> tuple[str, Table, Family]:
    """Tables whose new verdict holds exactly on supersets of a drawn antichain (often several)."""
    k = draw(st.integers(1, 5))
    sources = SOURCES[:k]
    nonempty = [t for t in cell_order(sources) if t]
    picks = draw(st.lists(st.sampled_from(nonempty), min_size=1, max_size=6))
    antichain = frozenset(t for t in picks if not any(p < t for p in picks))
    table = {t: int(any(a <= t for a in antichain)) for t in cell_order(sources)}
    return sources, table, antichain


class Counter:
    """A verdict function that records how often each hybrid is executed."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.calls: dict[frozenset[str], int] = {}

    def __call__(self, t: frozenset[str]) -> object:
        self.calls[t] = self.calls.get(t, 0) + 1
        return self.table[t]


@FAST
@given(tables())
def test_family_matches_brute_force(case: tuple[str, Table]) -> None:
    sources, table = case
    expected = brute_family(sources, table)
    assert receipt_family(sources, table.__getitem__) == expected
    assert receipt_family(list(sources), table.__getitem__) == expected
    assert execute_cube(sources, table.__getitem__).receipt == expected
    assert receipt_from_cells(table, sources) == expected


@FAST
@given(tables())
def test_family_is_an_antichain_within_sperner_bound(case: tuple[str, Table]) -> None:
    sources, table = case
    family = receipt_family(sources, table.__getitem__)
    k = len(sources)
    assert all(t and t <= frozenset(sources) for t in family)
    assert not any(a < b for a in family for b in family)
    assert len(family) <= comb(k, k // 2)
    assert bool(family) == (table[frozenset()] != table[frozenset(sources)])


@FAST
@given(tables())
def test_execution_counts(case: tuple[str, Table]) -> None:
    sources, table = case
    fn = Counter(table)
    cube = execute_cube(sources, fn)
    assert all(n == 1 for n in fn.calls.values()), "memoised: each hybrid runs once"
    assert cube.executions == len(fn.calls) == len(cube.cells)
    assert all(cube.cells[t] == table[t] for t in cube.cells)
    if table[frozenset()] == table[frozenset(sources)]:
        assert cube.executions == 2
    assert cube.executions <= 2 ** len(sources)
    assert cube.old == table[frozenset()] and cube.new == table[frozenset(sources)]


@FAST
@given(tables())
def test_full_cube_executes_every_cell_once(case: tuple[str, Table]) -> None:
    sources, table = case
    fn = Counter(table)
    cube = execute_cube(sources, fn, full=True)
    assert cube.complete and cube.cells == table
    assert cube.executions == 2 ** len(sources) == sum(fn.calls.values())
    assert cube.receipt == brute_family(sources, table)


@FAST
@given(monotone_tables())
def test_monotone_tables_recover_their_antichain(case: tuple[str, Table, Family]) -> None:
    sources, table, antichain = case
    assert receipt_family(sources, table.__getitem__) == antichain


def test_random_tables_include_ambiguous_families() -> None:
    # Exhaustive over binary tables on three sources: several minimal accounts do occur.
    sources = "GNA"
    interior = cell_order(sources)[1:-1]
    sizes = set()
    for bits in itertools.product((0, 1), repeat=len(interior)):
        table = {frozenset(): 0, frozenset(sources): 1, **dict(zip(interior, bits, strict=True))}
        family = receipt_family(sources, table.__getitem__)
        assert family == brute_family(sources, table)
        sizes.add(len(family))
    assert sizes == {1, 2, 3}


def test_worst_case_needs_every_cell() -> None:
    for k in range(1, 6):
        sources = SOURCES[:k]
        cube = execute_cube(sources, lambda t, s=frozenset(sources): t == s)
        assert cube.receipt == frozenset({frozenset(sources)})
        assert cube.executions == 2**k


def test_both_single_source_accounts_are_kept() -> None:
    family = receipt_family("GNA", lambda t: "approve" if {"G", "N"} & t else "deny")
    assert family == frozenset({frozenset("G"), frozenset("N")})


@FAST
@given(tables(), st.data())
def test_certification_exact_and_perturbed(case: tuple[str, Table], data: st.DataObject) -> None:
    sources, table = case
    exact = brute_family(sources, table)
    as_lists = [sorted(t) for t in exact]
    assert certify(as_lists, sources, table.__getitem__)
    nonempty = [t for t in cell_order(sources) if t]
    perturbed: list[Family] = [exact | {frozenset()}]
    extra = data.draw(st.sampled_from(nonempty))
    if extra not in exact:
        perturbed.append(exact | {extra})
    if exact:
        member = data.draw(st.sampled_from(sorted(exact, key=sorted)))
        perturbed.append(exact - {member})
        bigger = [t for t in nonempty if member < t]
        if bigger:
            perturbed.append((exact - {member}) | {bigger[0]})
    for family in perturbed:
        assert not certify(family, sources, table.__getitem__)


@FAST
@given(tables(), st.data())
def test_certify_cube_executes_instead_of_trusting(
    case: tuple[str, Table], data: st.DataObject
) -> None:
    sources, table = case
    assert certify_cube(dict(table), sources, table.__getitem__)
    cell = data.draw(st.sampled_from(sorted(table, key=sorted)))
    wrong = {**table, cell: -1}
    assert not certify_cube(wrong, sources, table.__getitem__)
    partial = {t: v for t, v in table.items() if t != cell}
    assert not certify_cube(partial, sources, table.__getitem__)


@FAST
@given(tables(max_k=4))
def test_irrelevant_declared_source_leaves_receipt_unchanged(case: tuple[str, Table]) -> None:
    sources, table = case
    padded = sources + "Z"
    family = receipt_family(padded, lambda t: table[t - {"Z"}])
    assert family == brute_family(sources, table)


def test_source_errors() -> None:
    too_many = [f"s{i}" for i in range(MAX_SOURCES + 1)]
    with pytest.raises(UserError, match="at most 12"):
        receipt_family(too_many, lambda t: 0)
    with pytest.raises(UserError, match="distinct"):
        execute_cube(["G", "G"], lambda t: 0)
    with pytest.raises(UserError, match="at least one"):
        certify([], [], lambda t: 0)
    with pytest.raises(UserError, match="no cell"):
        receipt_from_cells({frozenset(): 0, frozenset("GN"): 1}, "GN")


def test_twelve_sources_are_supported() -> None:
    sources = [f"s{i}" for i in range(MAX_SOURCES)]
    cube = execute_cube(sources, lambda t: "s0" in t)
    assert cube.receipt == frozenset({frozenset({"s0"})})
