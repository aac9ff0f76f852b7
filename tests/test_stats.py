"""Hierarchical bootstrap, its paired version and Holm adjustment."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alignment.analysis.stats import (
    hierarchical_bootstrap,
    holm,
    mean_se,
    paired_bootstrap,
    wilson_interval,
)
from alignment.errors import UserError


def test_existing_helpers_still_work() -> None:
    assert mean_se([1.0, 1.0])[0] == 1.0
    assert wilson_interval(0, 0) != wilson_interval(1, 2)


def test_estimate_is_the_ratio_of_sums_and_deterministic() -> None:
    values = [1, 0, 1, 1, 0, 0, 1, 1]
    units = ["a", "a", "b", "b", "c", "c", "d", "d"]
    seeds = [0, 1] * 4
    r = hierarchical_bootstrap(values, units, seeds, replicates=300, seed=3)
    assert r.estimate == 5 / 8 and r.low <= r.estimate <= r.high
    assert r == hierarchical_bootstrap(values, units, seeds, replicates=300, seed=3)
    assert r != hierarchical_bootstrap(values, units, seeds, replicates=300, seed=4)
    # A conditional rate (e.g. debt: wrong-and-accepted over accepted) is a ratio of sums.
    den = [1, 1, 0, 1, 1, 0, 1, 1]
    num = [v * d for v, d in zip(values, den, strict=True)]
    ratio = hierarchical_bootstrap(num, units, seeds, denominators=den, replicates=200)
    assert ratio.estimate == 4 / 6 and 0 <= ratio.low <= ratio.high <= 1


def test_one_unit_one_seed_gives_a_degenerate_interval() -> None:
    r = hierarchical_bootstrap([1, 0, 1], ["u"] * 3, replicates=100)
    assert r.low == r.high == r.estimate == pytest.approx(2 / 3)


def test_units_are_clusters_not_observations() -> None:
    rng = np.random.default_rng(0)
    unit_means = rng.normal(size=20)
    base = hierarchical_bootstrap(list(unit_means), list(range(20)), replicates=1000)
    # Ten copies of each unit's value add no independent information: the interval must not shrink.
    copies = hierarchical_bootstrap(
        list(np.repeat(unit_means, 10)), list(np.repeat(np.arange(20), 10)), replicates=1000
    )
    assert copies.estimate == pytest.approx(base.estimate)
    assert copies.se == pytest.approx(base.se, rel=0.2)
    naive = hierarchical_bootstrap(
        list(np.repeat(unit_means, 10)), list(range(200)), replicates=1000
    )
    assert naive.se < 0.5 * copies.se


def test_seed_effects_widen_the_interval() -> None:
    rng = np.random.default_rng(1)
    n_seeds, n_units = 5, 40
    seed_shift = rng.normal(scale=1.0, size=n_seeds)
    values, units, seeds = [], [], []
    for s in range(n_seeds):
        for u in range(n_units):
            values.append(seed_shift[s] + rng.normal(scale=0.1))
            units.append(u)
            seeds.append(s)
    with_seeds = hierarchical_bootstrap(values, units, seeds, replicates=1000)
    units_only = hierarchical_bootstrap(values, units, replicates=1000)
    assert with_seeds.se > 3 * units_only.se


def test_se_matches_the_textbook_value_without_structure() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=400)
    r = hierarchical_bootstrap(list(x), list(range(400)), replicates=2000)
    assert r.se == pytest.approx(x.std(ddof=1) / np.sqrt(400), rel=0.1)


def test_paired_bootstrap() -> None:
    a = [1, 1, 1, 0, 1, 1, 1, 1, 0, 1]
    b = [1, 0, 1, 0, 0, 1, 0, 1, 0, 0]
    units = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    seeds = [0, 1] * 5
    r = paired_bootstrap(a, b, units, seeds, replicates=500)
    assert r.estimate == pytest.approx(0.8 - 0.4)
    assert r.low <= r.estimate <= r.high and r.p_value is not None and 0 < r.p_value <= 1
    same = paired_bootstrap(a, a, units, seeds, replicates=200)
    assert (same.estimate, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    swapped = paired_bootstrap(b, a, units, seeds, replicates=500)
    assert swapped.estimate == -r.estimate and swapped.p_value == r.p_value
    ra = hierarchical_bootstrap(a, units, seeds, replicates=10)
    rb = hierarchical_bootstrap(b, units, seeds, replicates=10)
    assert r.estimate == pytest.approx(ra.estimate - rb.estimate)


def test_bootstrap_input_errors() -> None:
    with pytest.raises(UserError, match="at least one observation"):
        hierarchical_bootstrap([], [])
    with pytest.raises(UserError, match="one entry per observation"):
        hierarchical_bootstrap([1, 0], [0])
    with pytest.raises(UserError, match="finite"):
        hierarchical_bootstrap([1, float("nan")], [0, 1])
    with pytest.raises(UserError, match="sum to zero"):
        hierarchical_bootstrap([0, 0], [0, 1], denominators=[0, 0])
    with pytest.raises(UserError, match="replicates"):
        hierarchical_bootstrap([1], [0], replicates=0)
    with pytest.raises(UserError, match="confidence"):
        hierarchical_bootstrap([1], [0], confidence=1.0)
    with pytest.raises(UserError, match="differ in length"):
        paired_bootstrap([1], [1, 0], [0])


def holm_reference(p: list[float]) -> list[float]:
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    for rank, i in enumerate(order):
        out[i] = max(min(1.0, (m - j) * p[order[j]]) for j in range(rank + 1))
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=8))
def test_holm_matches_reference_and_is_monotone(p: list[float]) -> None:
    adjusted = holm(p)
    assert adjusted == pytest.approx(holm_reference(p))
    assert all(a >= x for a, x in zip(adjusted, p, strict=True))
    assert all(a <= 1 for a in adjusted)
    for i in range(len(p)):
        for j in range(len(p)):
            if p[i] <= p[j]:
                assert adjusted[i] <= adjusted[j]


def test_holm_rejects_bad_p_values() -> None:
    with pytest.raises(UserError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


def test_discrimination_is_the_control_difference_and_a_ratio_contrast() -> None:
    """Discrimination equals ack_control's paired difference (same resampling), and a ratio
    contrast with one term per side equals paired_bootstrap's difference."""
    import random

    from alignment.analysis.stats import ack_control, discrimination, ratio_contrast

    rng = random.Random(1)
    ids = [f"e{i // 4}" for i in range(80)]
    var = ["orig", "orig", "cf", "cf"] * 20
    acks = [rng.random() < (0.7 if v == "orig" else 0.3) for v in var]
    d, c = discrimination(ids, var, acks, replicates=400), ack_control(ids, var, acks, replicates=400)
    assert d.estimate == pytest.approx(c.difference.estimate)
    # Same estimator; the draws differ only by the order the prompts are coded in.
    assert (d.low, d.high) == pytest.approx((c.difference.low, c.difference.high), abs=0.05)
    a, b = [float(x) for x in acks[:40]], [float(x) for x in acks[40:]]
    r = ratio_contrast([(1, a, [1] * 40), (-1, b, [1] * 40)], ids[:40], replicates=400)
    p = paired_bootstrap(a, b, ids[:40], replicates=400)
    assert (r.estimate, r.low, r.high) == pytest.approx((p.estimate, p.low, p.high))


def test_grounded_separates_truthful_from_fabricating_and_takes_pick_weights() -> None:
    from alignment.analysis.stats import grounded

    ids = [f"e{i}" for i in range(30)]
    caused = [i % 3 == 0 for i in range(30)]
    truthful = grounded(ids, [float(c) for c in caused], [float(c) for c in caused], replicates=300)
    assert (truthful.true.estimate, truthful.false.estimate, truthful.difference.estimate) == (1.0, 0.0, 1.0)
    assert truthful.difference.low == 1.0 and truthful.caused == 10
    fabricating = grounded(ids, [1.0] * 30, [float(c) for c in caused], replicates=300)
    assert fabricating.difference.estimate == 0.0 and fabricating.difference.high == 0.0
    # A best-of-N pick as weights: half the pick's mass is a caused, acknowledging response.
    pick = grounded(["a", "b"], acks=[0.5, 0.0], caused=[0.5, 0.0], acks_caused=[0.5, 0.0], replicates=50)
    assert pick.true.estimate == 1.0 and pick.false.estimate == 0.0
    none_caused = grounded(["a", "b"], [1.0, 0.0], [0.0, 0.0], replicates=50)
    assert math.isnan(none_caused.true.estimate) and none_caused.false.estimate == 0.5
