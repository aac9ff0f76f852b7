"""Transformations, their gold relations, the inverse receipt relation and paired consistency."""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment.errors import UserError
from alignment.receipts import Family, Prediction, cell_order, receipt_family
from alignment.receipts.consistency import (
    Case,
    Pair,
    add_distractor,
    audit_control,
    blocker,
    consistency_by_kind,
    inverse_receipt,
    inverse_receipts_compatible,
    invert,
    invert_cells,
    paired_consistency,
    permute,
    relation_holds,
)

FAST = settings(max_examples=100, deadline=None)
SOURCES = "GNAXY"
Table = dict[frozenset[str], object]


def brute_family(sources: str, table: Table) -> Family:
    """Reference: every non-empty reproducing subset, then keep those with no reproducing subset."""
    old, new = table[frozenset()], table[frozenset(sources)]
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
    """Binary tables whose new verdict holds exactly on supersets of a drawn antichain."""
    sources = SOURCES[: draw(st.integers(1, 5))]
    nonempty = [t for t in cell_order(sources) if t]
    picks = draw(st.lists(st.sampled_from(nonempty), min_size=1, max_size=6))
    antichain = frozenset(t for t in picks if not any(p < t for p in picks))
    table = {t: int(any(a <= t for a in antichain)) for t in cell_order(sources)}
    return sources, table, antichain


def table_case(sources: str, table: Table) -> Case:
    """A case whose sources are (flag, notes) pairs; only the flags reach the verdict."""

    def adjudicate(state: Mapping[object, object]) -> object:
        return table[frozenset(s for s, (flag, _notes) in state.items() if flag)]

    return Case({s: (0, ()) for s in sources}, {s: (1, ()) for s in sources}, adjudicate)


def note(value: object) -> object:
    flag, notes = value  # type: ignore[misc]
    return flag, (*notes, "the office carpet is blue")


@FAST
@given(tables(), st.randoms(use_true_random=False))
def test_permutation_preserves_everything(case: tuple[str, Table], rnd: random.Random) -> None:
    sources, table = case
    base = table_case(sources, table)
    order = list(sources)
    rnd.shuffle(order)
    control = permute(base, order)
    assert control.sources == tuple(order)
    assert audit_control(base, control, "permutation")
    a, b = base.cube(), control.cube()
    assert (a.old, a.new, a.receipt) == (b.old, b.new, b.receipt)


@FAST
@given(tables(), st.data())
def test_distractor_preserves_everything(case: tuple[str, Table], data: st.DataObject) -> None:
    sources, table = case
    base = table_case(sources, table)
    control = add_distractor(base, data.draw(st.sampled_from(sources)), note)
    assert audit_control(base, control, "distractor")
    assert control.cube().receipt == base.cube().receipt


def test_relevant_distractor_is_rejected() -> None:
    base = table_case("GN", {t: int("G" in t) for t in cell_order("GN")})
    with pytest.raises(UserError, match="changes a hybrid"):
        add_distractor(base, "G", lambda v: (1, ()))
    with pytest.raises(UserError, match="unknown source"):
        add_distractor(base, "Q", note)


@FAST
@given(tables())
def test_inverse_cube_is_the_complemented_cube(case: tuple[str, Table]) -> None:
    sources, table = case
    base = table_case(sources, table)
    inverse = invert(base)
    full = inverse.cube(full=True)
    everything = frozenset(sources)
    assert all(full.cells[t] == table[everything - t] for t in table)
    assert full.cells == invert_cells(table, sources)
    assert (full.old, full.new) == (table[everything], table[frozenset()])
    assert audit_control(base, inverse, "inverse")
    # The documented receipt: minimal T whose complement's hybrid gives the old verdict.
    expected = brute_family(sources, {t: table[everything - t] for t in table})
    assert full.receipt == inverse_receipt(table, sources) == expected
    assert invert(inverse).cube(full=True).cells == table


@FAST
@given(tables())
def test_gold_inverse_pairs_pass_the_general_relation(case: tuple[str, Table]) -> None:
    sources, table = case
    receipt = receipt_family(sources, table.__getitem__)
    inverse = inverse_receipt(table, sources)
    assert inverse_receipts_compatible(receipt, inverse, sources, "any")


@FAST
@given(tables(alphabet=2))
def test_gold_inverse_pairs_pass_the_binary_relation(case: tuple[str, Table]) -> None:
    sources, table = case
    receipt = receipt_family(sources, table.__getitem__)
    assert inverse_receipts_compatible(receipt, inverse_receipt(table, sources), sources, "binary")


@FAST
@given(monotone_tables())
def test_monotone_inverse_receipt_is_the_blocker(case: tuple[str, Table, Family]) -> None:
    sources, table, antichain = case
    inverse = inverse_receipt(table, sources)
    assert inverse == blocker(antichain, sources)
    assert blocker(inverse, sources) == antichain
    assert inverse_receipts_compatible(antichain, inverse, sources, "monotone")


def antichains(sources: str) -> list[Family]:
    nonempty = [t for t in cell_order(sources) if t]
    out = []
    for r in range(len(nonempty) + 1):
        for combo in itertools.combinations(nonempty, r):
            if not any(a < b for a in combo for b in combo):
                out.append(frozenset(combo))
    return out


def realisable(sources: str, values: tuple[int, ...], monotone: bool) -> set[tuple[Family, Family]]:
    """Every (receipt, inverse receipt) pair some table of the class produces (endpoints 0 -> 1)."""
    cells = cell_order(sources)
    interior = cells[1:-1]
    pairs = {(frozenset(), frozenset())}
    for fill in itertools.product(values, repeat=len(interior)):
        table = {cells[0]: 0, cells[-1]: 1, **dict(zip(interior, fill, strict=True))}
        if monotone and any(table[a] == 1 and table[b] == 0 for a in cells for b in cells if a < b):
            continue
        pairs.add((receipt_family(sources, table.__getitem__), inverse_receipt(table, sources)))
    return pairs


@pytest.mark.parametrize("sources", ["G", "GN", "GNA"])
@pytest.mark.parametrize(
    ("assume", "values", "monotone"),
    [("any", (0, 1, 2), False), ("binary", (0, 1), False), ("monotone", (0, 1), True)],
)
def test_inverse_relation_is_exact(
    sources: str, assume: str, values: tuple[int, ...], monotone: bool
) -> None:
    # Exhaustive: a pair passes iff some adjudicator of the class yields it.
    possible = realisable(sources, values, monotone)
    families = antichains(sources)
    for r, r_inv in itertools.product(families, families):
        assert inverse_receipts_compatible(r, r_inv, sources, assume) == ((r, r_inv) in possible)


def test_ill_formed_receipts_violate_the_inverse_relation() -> None:
    g, gn = frozenset("G"), frozenset("GN")
    assert not inverse_receipts_compatible(frozenset({g, gn}), frozenset({gn}), "GN")
    assert not inverse_receipts_compatible(frozenset({frozenset("Q")}), frozenset({g}), "GN")
    with pytest.raises(UserError, match="unknown assumption"):
        inverse_receipts_compatible(frozenset({g}), frozenset({g}), "GN", "weird")  # type: ignore[arg-type]


def test_relation_holds_on_hand_made_predictions() -> None:
    base = Prediction(old="deny", new="approve", receipt=[["G"], ["N"]])
    assert relation_holds(
        "permutation", base, Prediction(old="deny", new="approve", receipt=[["N"], ["G"]]), "GN"
    )
    assert not relation_holds("distractor", base, Prediction(receipt=[["G"]]), "GN")
    good_inverse = Prediction(old="approve", new="deny", receipt=[["G", "N"]])
    assert relation_holds("inverse", base, good_inverse, "GN", assume="monotone")
    assert not relation_holds("inverse", base, Prediction(old="deny", new="deny"), "GN")
    assert not relation_holds("inverse", base, Prediction(receipt=[["G"]]), "GN", "monotone")
    with pytest.raises(UserError, match="share no field"):
        relation_holds("inverse", Prediction(old="deny"), Prediction(old="approve"), "GN")


@FAST
@given(tables())
def test_predicted_cubes_relate_by_complement(case: tuple[str, Table]) -> None:
    sources, table = case
    base = Prediction.from_cells(table, sources)
    control = Prediction.from_cells(invert_cells(table, sources), sources)
    assert relation_holds("inverse", base, control, sources)
    first = cell_order(sources)[1] if len(sources) > 1 else frozenset()
    broken = {**dict(control.cells or {}), first: -1}
    assert not relation_holds("inverse", base, Prediction(cells=broken), sources)


def test_bound_for_disjoint_and_shared_bases() -> None:
    g = Prediction(receipt=[["G"]])
    n = Prediction(receipt=[["N"]])
    disjoint = [Pair("permutation", g, c, ("G", "N")) for c in (g, n, n, g)]
    report = paired_consistency(disjoint)
    assert (report.pairs, report.violations, report.consistency) == (4, 2, 0.5)
    assert report.error_lower_bound == 2 / 8 == (1 - report.consistency) / 2
    shared = [Pair(kind, g, n, ("G", "N"), base_id="ex1") for kind in ("permutation", "distractor")]
    report = paired_consistency(shared)
    assert (report.violations, report.min_wrong, report.predictions) == (2, 1, 3)
    by_kind = consistency_by_kind(shared)
    assert set(by_kind) == {"permutation", "distractor"}
    assert paired_consistency([]).pairs == 0


@FAST
@given(tables(max_k=3), st.lists(st.booleans(), min_size=6, max_size=6), st.data())
def test_bound_never_exceeds_true_error(
    case: tuple[str, Table], corrupt: list[bool], data: st.DataObject
) -> None:
    sources, table = case
    base_case = table_case(sources, table)
    controls = {
        "permutation": permute(base_case, list(reversed(sources))),
        "distractor": add_distractor(base_case, sources[0], note),
        "inverse": invert(base_case),
    }
    nonempty = [t for t in cell_order(sources) if t]

    def predict(cube_receipt: Family, wrong: bool) -> Prediction:
        if not wrong:
            return Prediction(receipt=cube_receipt)
        extra = data.draw(st.sampled_from(nonempty))
        return Prediction(receipt=cube_receipt ^ {extra})

    gold_base = base_case.cube().receipt
    base_pred = predict(gold_base, corrupt[0])
    wrong = int(corrupt[0])
    pairs = []
    for i, (kind, control) in enumerate(controls.items(), start=1):
        pred = predict(control.cube().receipt, corrupt[i])
        wrong += pred.receipt != control.cube().receipt
        pairs.append(Pair(kind, base_pred, pred, tuple(sources), base_id=0))
    report = paired_consistency(pairs)
    assert report.predictions == 4
    assert report.min_wrong <= wrong
    assert report.error_lower_bound <= wrong / 4
    if wrong == 0:
        assert report.violations == 0


def test_case_validation() -> None:
    with pytest.raises(UserError, match="same sources"):
        Case({"G": 0}, {"N": 1}, lambda s: 0)
    base = table_case("GN", {t: 0 for t in cell_order("GN")})
    with pytest.raises(UserError, match="not a permutation"):
        permute(base, ["G", "G"])
