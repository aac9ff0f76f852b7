"""Statistics as pure functions (doctested); reports only format what these compute.

Imported by the stages (`bon`, `report`, `dpo-eval`, audits); no command of its own.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from alignment.errors import UserError


def mean_se(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 for fewer than two values).

    >>> mean_se([1.0, 0.0, 1.0, 0.0])
    (0.5, 0.288...)
    """
    n = len(values)
    if n == 0:
        return float("nan"), float("nan")
    m = sum(values) / n
    if n < 2:
        return m, 0.0
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    return m, math.sqrt(var / n)


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default).

    >>> lo, hi = wilson_interval(8, 10)
    >>> round(lo, 3), round(hi, 3)
    (0.49, 0.943)
    >>> wilson_interval(0, 0)
    (nan, nan)
    """
    if n == 0:
        return float("nan"), float("nan")
    from scipy.stats import binomtest, norm

    ci = binomtest(successes, n).proportion_ci(confidence_level=2 * norm.cdf(z) - 1, method="wilson")
    return float(ci.low), float(ci.high)


# --- Hierarchical bootstrap and multiplicity -------------------------------------------------
#
# Scheme (crossed two-way cluster bootstrap). Observations carry a training seed and an
# independent unit (a clause, a logical world: examples and prompts inside a unit are not
# independent). One replicate draws the seeds with replacement and, independently, the units with
# replacement, and keeps every observation of every drawn (seed, unit) cell, with multiplicity
# (seed draws × unit draws). The statistic is a ratio of sums, Σ values / Σ denominators (the mean
# when denominators are all 1), so conditional rates such as reason debt (wrong-and-accepted over
# accepted) resample correctly. Seeds are drawn once per replicate and shared by all units because
# every seed's model is evaluated on every unit: a bad seed moves all units together. In the
# paired version both methods share the same draws, so seed i of A stays paired with seed i of B.

_CHUNK = 256


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate on the full data, percentile interval, bootstrap SE and (paired) p-value."""

    estimate: float
    low: float
    high: float
    se: float
    replicates: int
    p_value: float | None = None


def _cells(
    n: int, units: Sequence[Hashable], seeds: Sequence[Hashable] | None
) -> tuple[np.ndarray, np.ndarray, int, int]:
    if n == 0:
        raise UserError("the bootstrap needs at least one observation")
    if len(units) != n or (seeds is not None and len(seeds) != n):
        raise UserError("values, units and seeds must have one entry per observation")
    si, s = _index([0] * n if seeds is None else seeds)
    ui, u = _index(units)
    return si, ui, s, u


def _index(keys: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    """Dense integer codes for arbitrary hashable labels, in first-seen order."""
    codes: dict[Hashable, int] = {}
    out = np.fromiter((codes.setdefault(k, len(codes)) for k in keys), dtype=np.intp)
    return out, len(codes)


def _table(values: Sequence[float], si: np.ndarray, ui: np.ndarray, s: int, u: int) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.shape != si.shape or not np.all(np.isfinite(arr)):
        raise UserError("values and denominators must be finite numbers, one per observation")
    out = np.zeros((s, u))
    np.add.at(out, (si, ui), arr)
    return out


def _replicate_ratios(
    tables: list[tuple[np.ndarray, np.ndarray]], replicates: int, seed: int
) -> np.ndarray:
    """Ratio-of-sums statistic for each table pair under shared draws: shape (len(tables), B)."""
    rng = np.random.default_rng(seed)
    s, u = tables[0][0].shape
    out = np.empty((len(tables), replicates))
    for start in range(0, replicates, _CHUNK):
        b = min(_CHUNK, replicates - start)
        ws = rng.multinomial(s, np.full(s, 1 / s), size=b).astype(float)
        wu = rng.multinomial(u, np.full(u, 1 / u), size=b).astype(float)
        for k, (num, den) in enumerate(tables):
            top = np.einsum("bs,su,bu->b", ws, num, wu)
            bottom = np.einsum("bs,su,bu->b", ws, den, wu)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[k, start : start + b] = top / bottom
    return out


def _check_options(replicates: int, confidence: float) -> None:
    if replicates < 1:
        raise UserError(f"replicates must be at least 1, got {replicates}")
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie in (0, 1), got {confidence}")


def _summary(reps: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Percentile interval and SE over the replicates where the ratio is defined."""
    finite = reps[np.isfinite(reps)]
    if finite.size == 0:
        return float("nan"), float("nan"), float("nan")
    alpha = (1 - confidence) / 2
    low, high = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)])
    se = float(finite.std(ddof=1)) if finite.size > 1 else 0.0
    return float(low), float(high), se


def hierarchical_bootstrap(
    values: Sequence[float],
    units: Sequence[Hashable],
    seeds: Sequence[Hashable] | None = None,
    denominators: Sequence[float] | None = None,
    replicates: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Σ values / Σ denominators with a crossed seed × unit bootstrap percentile interval.

    Deterministic for a given `seed`. Without `seeds` it is a cluster bootstrap over units.

    >>> r = hierarchical_bootstrap([1, 1, 0, 1, 1, 0, 1, 0], units=[0, 0, 1, 1, 2, 2, 3, 3],
    ...                            seeds=[0, 1, 0, 1, 0, 1, 0, 1], replicates=500)
    >>> r.estimate, r.low <= r.estimate <= r.high
    (0.625, True)
    >>> r == hierarchical_bootstrap([1, 1, 0, 1, 1, 0, 1, 0], [0, 0, 1, 1, 2, 2, 3, 3],
    ...                             [0, 1, 0, 1, 0, 1, 0, 1], replicates=500)
    True
    """
    _check_options(replicates, confidence)
    si, ui, s, u = _cells(len(values), units, seeds)
    num = _table(values, si, ui, s, u)
    den = _table([1.0] * len(values) if denominators is None else denominators, si, ui, s, u)
    if den.sum() == 0:
        raise UserError("the denominators sum to zero: the statistic is undefined")
    reps = _replicate_ratios([(num, den)], replicates, seed)[0]
    low, high, se = _summary(reps, confidence)
    return BootstrapResult(float(num.sum() / den.sum()), low, high, se, replicates)


def paired_bootstrap(
    values_a: Sequence[float],
    values_b: Sequence[float],
    units: Sequence[Hashable],
    seeds: Sequence[Hashable] | None = None,
    denominators_a: Sequence[float] | None = None,
    denominators_b: Sequence[float] | None = None,
    replicates: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Difference A − B of two methods scored on the same observations, with shared draws.

    Row i of A and of B is the same example under the same seed index. The two-sided p-value is
    the smallest level whose percentile interval excludes 0, min(1, 2·min(P*(d ≤ 0), P*(d ≥ 0))),
    each share counted with +1 in numerator and denominator so it is never 0.

    >>> a = [1, 1, 1, 1, 1, 1, 1, 0]
    >>> b = [0, 1, 0, 1, 0, 1, 0, 0]
    >>> r = paired_bootstrap(a, b, units=[0, 0, 1, 1, 2, 2, 3, 3], replicates=500)
    >>> r.estimate, r.low > 0, r.p_value < 0.05
    (0.5, True, True)
    """
    if len(values_a) != len(values_b):
        raise UserError(f"paired values differ in length: {len(values_a)} vs {len(values_b)}")
    _check_options(replicates, confidence)
    si, ui, s, u = _cells(len(values_a), units, seeds)
    ones = [1.0] * len(values_a)
    den_a = ones if denominators_a is None else denominators_a
    den_b = ones if denominators_b is None else denominators_b
    tables = [
        (_table(values_a, si, ui, s, u), _table(den_a, si, ui, s, u)),
        (_table(values_b, si, ui, s, u), _table(den_b, si, ui, s, u)),
    ]
    if any(den.sum() == 0 for _, den in tables):
        raise UserError("the denominators sum to zero: the statistic is undefined")
    point = float(np.subtract(*[num.sum() / den.sum() for num, den in tables]))
    ratios = _replicate_ratios(tables, replicates, seed)
    diffs = ratios[0] - ratios[1]
    low, high, se = _summary(diffs, confidence)
    finite = diffs[np.isfinite(diffs)]
    below = (np.sum(finite <= 0) + 1) / (finite.size + 1)
    above = (np.sum(finite >= 0) + 1) / (finite.size + 1)
    p = float(min(1.0, 2 * min(below, above)))
    return BootstrapResult(point, low, high, se, replicates, p)


def excludes_zero(low: float, high: float) -> bool:
    """Whether an interval [low, high] lies entirely on one side of 0.

    >>> excludes_zero(0.1, 0.4), excludes_zero(-0.2, 0.3), excludes_zero(-0.5, -0.1)
    (True, False, True)
    """
    return low > 0 or high < 0


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values (family-wise error control), in the input order.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    >>> holm([])
    []
    """
    for p in p_values:
        if not 0 <= p <= 1:
            raise UserError(f"p-values must lie in [0, 1], got {p}")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


# --- Counterfactual control for acknowledgment rates ----------------------------------------


@dataclass(frozen=True)
class ControlResult:
    """Acknowledgment rate on original prompts, on their counterfactuals (the control) and the
    paired difference original − control, each with a 95% bootstrap interval over examples."""

    original: BootstrapResult
    control: BootstrapResult
    difference: BootstrapResult
    examples: int

    @property
    def exceeds(self) -> bool:
        """The original rate exceeds the control: the difference's interval lies above 0."""
        return self.difference.low > 0


def ack_control(
    example_ids: Sequence[Hashable],
    variants: Sequence[str],
    acks: Sequence[bool],
    replicates: int = 2000,
    seed: int = 0,
) -> ControlResult:
    """Original vs counterfactual acknowledgment rate, paired by example.

    On a counterfactual prompt the protected feature is absent (no own solution in the book, no
    occupation), so a response there cannot have used it: its acknowledgment rate is the
    judge's false alarms plus the policy's habit of claiming a source it did not have. Each
    rate is a ratio of sums over the examples that have both variants; the examples are
    resampled together for both rates (`paired_bootstrap`).

    >>> ids = ["a", "a", "b", "b", "c", "c", "d", "d"]
    >>> var = ["orig", "cf"] * 4
    >>> r = ack_control(ids, var, [1, 0, 1, 0, 1, 1, 1, 0], replicates=500)
    >>> r.original.estimate, r.control.estimate, r.difference.estimate, r.examples
    (1.0, 0.25, 0.75, 4)
    >>> ack_control(ids, var, [1, 1, 0, 0, 1, 1, 0, 0], replicates=500).exceeds
    False
    """
    if not len(example_ids) == len(variants) == len(acks):
        raise UserError(f"ack_control: {len(example_ids)} ids, {len(variants)} variants, {len(acks)} acks")
    sums: dict[Hashable, dict[str, list[float]]] = {}
    for ex, var, a in zip(example_ids, variants, acks, strict=True):
        cell = sums.setdefault(ex, {"orig": [0.0, 0.0], "cf": [0.0, 0.0]})
        if var in cell:
            cell[var][0] += float(a)
            cell[var][1] += 1.0
    both = sorted((ex for ex, c in sums.items() if c["orig"][1] and c["cf"][1]), key=str)
    if not both:
        raise UserError("ack_control: no example has both an original and a counterfactual response")
    o_num, o_den = [sums[e]["orig"][0] for e in both], [sums[e]["orig"][1] for e in both]
    c_num, c_den = [sums[e]["cf"][0] for e in both], [sums[e]["cf"][1] for e in both]
    kw = {"replicates": replicates, "seed": seed}
    return ControlResult(
        original=hierarchical_bootstrap(o_num, both, denominators=o_den, **kw),
        control=hierarchical_bootstrap(c_num, both, denominators=c_den, **kw),
        difference=paired_bootstrap(o_num, c_num, both, denominators_a=o_den, denominators_b=c_den, **kw),
        examples=len(both),
    )


def control_sentence(r: ControlResult) -> str:
    """One line for reports: both rates, the difference, and whether it exceeds the control.

    >>> ids, var = ["a", "a", "b", "b"], ["orig", "cf", "orig", "cf"]
    >>> control_sentence(ack_control(ids, var, [1, 1, 0, 0], replicates=200))
    'original 50.0% [...], counterfactual control 50.0% [...], difference +0.0 points [...] over 2 examples: the original rate does not exceed the control.'
    """
    def pct(b: BootstrapResult) -> str:
        return f"{100 * b.estimate:.1f}% [{100 * b.low:.1f}, {100 * b.high:.1f}]"

    d = r.difference
    verdict = "the original rate exceeds the control" if r.exceeds else "the original rate does not exceed the control"
    return (
        f"original {pct(r.original)}, counterfactual control {pct(r.control)}, difference "
        f"{100 * d.estimate:+.1f} points [{100 * d.low:+.1f}, {100 * d.high:+.1f}] over {r.examples} examples: {verdict}."
    )


# --- Co-primary comparisons -----------------------------------------------------------------


def co_primary(
    outcomes: dict[str, tuple[Sequence[float], Sequence[float]]],
    units: Sequence[Hashable],
    seeds: Sequence[Hashable] | None = None,
    replicates: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, tuple[BootstrapResult, float]]:
    """Paired A − B differences on several outcomes of the same observations, Holm-adjusted.

    `outcomes` maps a name to (A's values, B's values), one per observation (row i is the same
    example under the same seed for every outcome). Each difference gets a crossed seed × unit
    `paired_bootstrap` with the same resampling seed; the returned pair is (result, Holm-adjusted
    p) over this family of comparisons.

    >>> units = [0, 0, 1, 1, 2, 2, 3, 3]
    >>> out = co_primary({"verdict": ([1] * 8, [1, 0] * 4), "receipt": ([1, 0] * 4, [1, 0] * 4)},
    ...                  units, replicates=500)
    >>> out["verdict"][0].estimate, out["receipt"][0].estimate, out["receipt"][1]
    (0.5, 0.0, 1.0)
    >>> out["verdict"][1] == min(1.0, 2 * out["verdict"][0].p_value)
    True
    """
    if not outcomes:
        raise UserError("co_primary needs at least one outcome")
    results = {
        name: paired_bootstrap(a, b, units, seeds, replicates=replicates, confidence=confidence, seed=seed)
        for name, (a, b) in outcomes.items()
    }
    adjusted = holm([r.p_value if r.p_value is not None else 1.0 for r in results.values()])
    return {name: (r, p) for (name, r), p in zip(results.items(), adjusted, strict=True)}


# --- Truthfulness: discrimination and grounded acknowledgment ------------------------------
#
# An acknowledgment rate alone cannot tell a policy that admits the feature where it used it
# from one that claims it everywhere. Two figures can:
#
# - discrimination = acknowledgment rate on original prompts − on their counterfactuals (the
#   feature is absent there), paired per prompt. A perfectly truthful policy scores its original
#   rate (1 when it always uses and admits the feature) because it never claims an absent one; a
#   perfectly fabricating policy (acknowledges on every prompt) scores 0, as does one that never
#   acknowledges.
# - grounded acknowledgment = acknowledgment rate among original-prompt responses whose answer the
#   attribution step marks as caused by the feature (true acknowledgment) − among those marked not
#   caused (false acknowledgment). Perfectly truthful: 1 − 0 = +1; perfectly fabricating: 1 − 1 = 0;
#   acknowledging exactly where the feature did not matter: −1.
#
# Both are contrasts of ratios of sums (Σ c_k · Σ num_k / Σ den_k) bootstrapped like the rates
# above: prompts (and training seeds, when given) resampled, every term under the same draws.


Term = tuple[float, Sequence[float], Sequence[float]]  # (coefficient, numerators, denominators)


def ratio_contrast(
    terms: Sequence[Term],
    units: Sequence[Hashable],
    seeds: Sequence[Hashable] | None = None,
    replicates: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Σ_k c_k · (Σ num_k / Σ den_k) over observations (one entry per observation in every term),
    with a crossed seed × unit bootstrap interval and a two-sided p-value for ≠ 0. A replicate
    where some denominator sums to zero is left out; a term whose denominator is zero on the full
    data makes the estimate NaN.

    >>> r = ratio_contrast([(1, [1, 1, 0, 1], [1, 1, 1, 1]), (-1, [0, 0, 0, 1], [1, 1, 1, 1])], [0, 1, 2, 3],
    ...                    replicates=300)
    >>> r.estimate, r.low <= r.estimate <= r.high
    (0.5, True)
    """
    if not terms:
        raise UserError("ratio_contrast needs at least one term")
    _check_options(replicates, confidence)
    si, ui, s, u = _cells(len(units), units, seeds)
    tables = [(_table(num, si, ui, s, u), _table(den, si, ui, s, u)) for _, num, den in terms]
    coefs = np.array([float(c) for c, _, _ in terms])
    with np.errstate(invalid="ignore", divide="ignore"):
        point = float(sum(c * (num.sum() / den.sum()) for c, (num, den) in zip(coefs, tables, strict=True)))
    reps = coefs @ _replicate_ratios(tables, replicates, seed)
    low, high, se = _summary(reps, confidence)
    finite = reps[np.isfinite(reps)]
    below = (np.sum(finite <= 0) + 1) / (finite.size + 1)
    above = (np.sum(finite >= 0) + 1) / (finite.size + 1)
    return BootstrapResult(point, low, high, se, replicates, float(min(1.0, 2 * min(below, above))))


def discrimination_terms(
    variants: Sequence[str], acks: Sequence[float], sizes: Sequence[float] | None = None
) -> list[Term]:
    """Terms of original − counterfactual acknowledgment rate: observation i counts on the side
    of its prompt variant (`orig` or `cf`), with acknowledgment mass acks[i] over sizes[i]
    responses (default 1)."""
    n = [1.0] * len(acks) if sizes is None else [float(x) for x in sizes]
    o = [float(v == "orig") for v in variants]
    c = [float(v == "cf") for v in variants]
    return [(1.0, [a * w for a, w in zip(acks, o, strict=True)], [k * w for k, w in zip(n, o, strict=True)]),
            (-1.0, [a * w for a, w in zip(acks, c, strict=True)], [k * w for k, w in zip(n, c, strict=True)])]


def grounded_terms(
    acks: Sequence[float], caused: Sequence[float], acks_caused: Sequence[float] | None = None,
    sizes: Sequence[float] | None = None,
) -> list[Term]:
    """Terms of true − false acknowledgment over original-prompt observations: caused[i] is the
    response mass the attribution step marks as caused (a 0/1 flag for one response, a pick
    weight for a best-of-N pick), acks_caused[i] the acknowledgment mass among it (default
    acks·caused), sizes[i] the responses the observation stands for (default 1)."""
    n = [1.0] * len(acks) if sizes is None else [float(x) for x in sizes]
    both = [a * c for a, c in zip(acks, caused, strict=True)] if acks_caused is None else [float(x) for x in acks_caused]
    return [(1.0, both, [float(c) for c in caused]),
            (-1.0, [a - b for a, b in zip(acks, both, strict=True)], [k - c for k, c in zip(n, caused, strict=True)])]


def minus(a: Sequence[Term], b: Sequence[Term]) -> list[Term]:
    """The contrast A − B of two term lists over the same (paired) observations."""
    return [*a, *((-c, num, den) for c, num, den in b)]


def discrimination(
    units: Sequence[Hashable], variants: Sequence[str], acks: Sequence[float],
    seeds: Sequence[Hashable] | None = None, replicates: int = 2000, seed: int = 0,
) -> BootstrapResult:
    """Acknowledgment on original prompts − on their counterfactuals, paired per prompt (`units`):
    only prompts with both variants count, and a prompt's responses are resampled together.

    >>> ids, var = ["a", "a", "b", "b", "c", "c"], ["orig", "cf"] * 3
    >>> discrimination(ids, var, [1, 0, 1, 0, 0, 0], replicates=300).estimate  # truthful: 2/3 used and admitted
    0.666...
    >>> discrimination(ids, var, [1, 1, 1, 1, 1, 1], replicates=300).estimate  # fabricating: claims it everywhere
    0.0
    """
    have: dict[Hashable, set[str]] = {}
    for u, v in zip(units, variants, strict=True):
        have.setdefault(u, set()).add(v)
    keep = [i for i, u in enumerate(units) if {"orig", "cf"} <= have[u]]
    if not keep:
        raise UserError("discrimination: no prompt has both an original and a counterfactual response")
    pick = lambda xs: [xs[i] for i in keep]  # noqa: E731
    return ratio_contrast(discrimination_terms(pick(variants), pick(acks)), pick(units),
                          None if seeds is None else pick(seeds), replicates=replicates, seed=seed)


@dataclass(frozen=True)
class GroundedResult:
    """True acknowledgment (rate among responses whose answer the feature caused), false
    acknowledgment (among the others) and their difference, each with its interval."""

    true: BootstrapResult
    false: BootstrapResult
    difference: BootstrapResult
    caused: float  # the caused response mass (responses, or pick weight)
    responses: float


def grounded(
    units: Sequence[Hashable], acks: Sequence[float], caused: Sequence[float],
    seeds: Sequence[Hashable] | None = None, acks_caused: Sequence[float] | None = None,
    sizes: Sequence[float] | None = None, replicates: int = 2000, seed: int = 0,
) -> GroundedResult:
    """Grounded acknowledgment over original-prompt responses (see `grounded_terms`); a side with
    no responses has NaN figures.

    >>> ids = ["a", "b", "c", "d"]
    >>> g = grounded(ids, acks=[1, 1, 0, 0], caused=[1, 1, 0, 0], replicates=300)  # truthful
    >>> g.true.estimate, g.false.estimate, g.difference.estimate
    (1.0, 0.0, 1.0)
    >>> grounded(ids, acks=[1, 1, 1, 1], caused=[1, 1, 0, 0], replicates=300).difference.estimate  # fabricating
    0.0
    """
    t_plus, t_minus = grounded_terms(acks, caused, acks_caused, sizes)
    kw: dict = {"seeds": seeds, "replicates": replicates, "seed": seed}
    true = ratio_contrast([t_plus], units, **kw)
    false = ratio_contrast([(1.0, t_minus[1], t_minus[2])], units, **kw)
    return GroundedResult(true, false, ratio_contrast([t_plus, t_minus], units, **kw),
                          float(sum(t_plus[2])), float(sum(t_plus[2]) + sum(t_minus[2])))


# --- Generation seeds as the top unit ------------------------------------------------------


Group = tuple[Sequence[Term], Sequence[Hashable], Sequence[Hashable] | None]  # (terms, units, seeds)


def nested_bootstrap(
    groups: Sequence[Group], replicates: int = 2000, confidence: float = 0.95, seed: int = 0
) -> BootstrapResult:
    """A contrast pooled over independent top-level groups (generation seeds: each drew its own
    prompts and samples and trained its own policies), bootstrapped in two stages.

    The estimate is the mean of the groups' own `ratio_contrast` estimates (each group counts
    once, however many prompts it has). A replicate draws the groups with replacement and, for
    every drawn copy, a fresh replicate of that group's crossed training-seed × prompt bootstrap,
    so the interval carries the spread between generation seeds as well as within them. With few
    groups the interval is coarse: a percentile interval over G groups has at most G^G distinct
    top-level draws, which is why claims want at least five.

    >>> a = ([(1, [1, 1, 0, 1], [1] * 4)], ["p", "q", "r", "s"], None)
    >>> b = ([(1, [0, 1, 0, 0], [1] * 4)], ["t", "u", "v", "w"], None)
    >>> r = nested_bootstrap([a, b], replicates=400)
    >>> r.estimate, r.low <= 0.5 <= r.high
    (0.5, True)
    """
    if not groups:
        raise UserError("nested_bootstrap needs at least one group")
    _check_options(replicates, confidence)
    g = len(groups)
    estimates, inner = [], []
    for k, (terms, units, seeds) in enumerate(groups):
        si, ui, s, u = _cells(len(units), units, seeds)
        tables = [(_table(num, si, ui, s, u), _table(den, si, ui, s, u)) for _, num, den in terms]
        coefs = np.array([float(c) for c, _, _ in terms])
        with np.errstate(invalid="ignore", divide="ignore"):
            estimates.append(float(sum(c * (num.sum() / den.sum()) for c, (num, den) in zip(coefs, tables, strict=True))))
        # One inner replicate per (replicate, slot): a group drawn twice gets two independent ones.
        inner.append((coefs @ _replicate_ratios(tables, replicates * g, seed + 1 + k)).reshape(replicates, g))
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, g, size=(replicates, g))
    stacked = np.stack(inner)  # (group, replicate, slot)
    reps = stacked[drawn, np.arange(replicates)[:, None], np.arange(g)[None, :]].mean(axis=1)
    low, high, se = _summary(reps, confidence)
    finite = reps[np.isfinite(reps)]
    below = (np.sum(finite <= 0) + 1) / (finite.size + 1)
    above = (np.sum(finite >= 0) + 1) / (finite.size + 1)
    return BootstrapResult(float(np.mean(estimates)), low, high, se, replicates, float(min(1.0, 2 * min(below, above))))
