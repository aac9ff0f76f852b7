"""Acknowledgment rates that carry the judge's error: prediction-powered inference (`ppi_py`).

The judge labels every response; a person labels a few. Prediction-powered inference
(Angelopoulos et al., Science 2023) adds the judge's average error, measured on the labelled
few, to the judge's rate over all responses; PPI++ (Angelopoulos, Duchi & Zrnic 2023) scales the
judge's part by a power-tuning factor lambda in [0, 1] estimated from the data, so the interval is
never much wider than the labels' own and is narrow when the judge agrees with people. Both are
`ppi_py.ppi_mean_pointestimate` (by the method's authors) for the point estimate; the interval is
`alignment.judge_error.clustered`'s, because `ppi_py` has neither a variance clustered by prompt nor a
stratified one, and its tuned lambda and variance collapse to 0 when every label agrees with the
judge (small-sample guards there).

Every figure here is a linear functional of the human labels over a fixed set of M responses,
theta = sum_k c_k y_k: a rate (c_k = 1/M), a best-of-N pick's rate (c_k = the pick weight over
the number of prompts) or a paired difference of two such rates on the same prompts (c_k = the
difference of the two coefficients, so the pairing is exact: both rates see the same labels).
With Z_k = M c_k y_k the functional is the mean of Z over the M responses, which is what
`ppi_mean_ci` estimates. The judge's verdicts on *every* response (labelled ones included) form
its unlabelled side; the target is the policy's figure over the task's prompts (what the report's
bootstrap over prompts estimates), so with prompt ids the interval is clustered by prompt.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import alignment.judge_error.clustered as cl
from alignment.analysis.stats import wilson_interval
from alignment.errors import UserError

MIN_SIDE = 2  # labelled responses a figure needs among its own (each side of a difference)


def labelled_per_side(coef: np.ndarray, idx: list[int]) -> tuple[int, int]:
    """Labelled responses with a positive and with a negative coefficient.

    >>> labelled_per_side(np.array([0.5, 0.5, -0.5, 0.0]), [0, 1, 3])
    (2, 0)
    """
    c = coef[idx]
    return int((c > 0).sum()), int((c < 0).sum())


def enough_labels(coef: np.ndarray, idx: list[int]) -> bool:
    """Whether a figure has `MIN_SIDE` labelled responses among its own, on each side of a
    difference: with fewer, the labels say nothing about it and its interval would be the
    judge's sampling alone (one label has no spread).

    >>> c = np.array([0.5, 0.5, -0.5, -0.5, 0.0])
    >>> enough_labels(c, [0, 1, 2, 3]), enough_labels(c, [0, 1, 2, 4]), enough_labels(np.abs(c), [0, 2, 4])
    (True, False, True)
    """
    pos, neg = labelled_per_side(coef, idx)
    return pos >= MIN_SIDE and (neg >= MIN_SIDE or not (coef < 0).any())


@dataclass(frozen=True)
class PPIEstimate:
    """A judge-error-aware figure beside the judge-only one and the labels-only interval."""

    estimate: float
    low: float
    high: float
    judge_only: float
    labels_only: tuple[float, float]
    n_labelled: int
    n_unlabelled: int
    method: str
    # Standard errors of the unclipped intervals (PPI++ and labels-only CLT), for
    # combining independent estimates (`independent_difference`); not part of the JSON shape.
    se: float = float("nan")
    labels_se: float = float("nan")
    lam: float = float("nan")  # the lambda used (1: plain PPI; nan: not a single PPI estimate)
    quantile: float = float("nan")  # the intervals' t quantiles (nan: normal), kept for differences
    labels_quantile: float = float("nan")

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of `alignment judge estimate --json`."""
        return {
            "estimate": self.estimate,
            "ci": [self.low, self.high],
            "judge_only": self.judge_only,
            "labels_only_ci": list(self.labels_only),
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "method": self.method,
        }


def _checked(coef: Sequence[float], judge: Sequence[bool], labelled: Sequence[int],
             labels: Sequence[bool], weights: Sequence[float] | None) -> tuple[np.ndarray, ...]:
    c = np.asarray(coef, dtype=float)
    j = np.asarray(judge, dtype=float)
    idx = np.asarray(labelled, dtype=int)
    y = np.asarray(labels, dtype=float)
    if c.shape != j.shape or c.ndim != 1 or len(c) == 0:
        raise UserError(f"ppi: {len(c)} coefficients for {len(j)} judged responses")
    if not np.isfinite(c).all():
        raise UserError("ppi: a coefficient is not a finite number")
    if len(idx) != len(y) or len(idx) < 2:  # one label has no spread: its interval would be the judge's alone
        raise UserError(f"ppi: needs at least two labelled responses ({len(idx)} indices, {len(y)} labels)")
    if len(set(idx.tolist())) != len(idx) or idx.min() < 0 or idx.max() >= len(c):
        raise UserError("ppi: labelled indices must be distinct positions among the judged responses")
    w = None if weights is None else np.asarray(weights, dtype=float)
    if w is not None and (w.shape != y.shape or not np.isfinite(w).all() or (w <= 0).any()):
        raise UserError("ppi: weights must be one finite positive number per labelled response")
    return c, j, idx, y, w


def ppi_linear(coef: Sequence[float], judge: Sequence[bool], labelled: Sequence[int], labels: Sequence[bool],
               weights: Sequence[float] | None = None, confidence: float = 0.95,
               clusters: Sequence[Any] | None = None, strata: Sequence[Any] | None = None,
               population_strata: Sequence[Any] | None = None) -> PPIEstimate:
    """theta = sum_k coef_k * human_k over the judged responses, corrected by the labelled ones.

    `judge`: the judge's verdict on every response; `labelled`: positions of the labelled ones,
    `labels` their human labels; `weights`: a stratified sample's N_h / n_h per labelled response
    (None: a uniform sample), `strata` its stratum per labelled response (None with weights: the
    rows of one weight form a stratum); `clusters`: the prompt (`example_id`) of every judged
    response, so the interval is over prompts (None: responses independent); `population_strata`:
    every judged response's stratum (then `strata` are read from it; their sizes vary with the
    prompts, and that variance counts). The variance is
    `alignment.judge_error.clustered`'s; the labels-only interval is the same machinery with lambda = 0.

    A paired difference (response 0 and 1 are prompt a's two picks, 2 and 3 prompt b's): the
    judge says +0.5, the labels show it wrongly flagged response 0.

    >>> r = ppi_linear([0.5, -0.5, 0.5, -0.5], [True, False, True, False], [0, 1, 2, 3], [False, False, True, False])
    >>> r.judge_only, r.estimate, r.n_labelled, r.n_unlabelled, r.high - r.low > 0
    (1.0, 0.5, 4, 0, True)
    """
    from ppi_py import ppi_mean_pointestimate

    c, j, idx, y, w = _checked(coef, judge, labelled, labels, weights)
    if population_strata is not None:
        population_strata = np.asarray([str(x) for x in population_strata])
        if len(population_strata) != len(c):
            raise UserError(f"ppi: {len(population_strata)} strata for {len(c)} judged responses")
        strata = population_strata[idx].tolist()
    design = replace(_design(c, idx, w, clusters, strata),
                     population_strata=None if population_strata is None or w is None else population_strata)
    lam, how = cl.choose_lambda(c, j, idx, y, design)
    m = len(c)
    z, zhat = m * c[idx] * y, m * c * j  # the functional as a mean over the M responses
    tail = 0.5 + confidence / 2

    def interval(lam: float) -> tuple[float, float, float]:  # estimate, standard error, t quantile
        with np.errstate(invalid="ignore", divide="ignore"):
            est = float(np.ravel(ppi_mean_pointestimate(z, zhat[idx], zhat, lam=lam, w=w))[0])
        se = math.sqrt(cl.guarded_variance(c, j, idx, y, lam, design))
        return est, se, _t_quantile(tail, cl.degrees_of_freedom(c, j, idx, y, lam, design))

    (est, se, q), (labels_est, labels_se, labels_q) = interval(lam), interval(0.0)
    if lam > 0 and labels_q * labels_se < q * se:
        # A lambda set by a guard (plain PPI, tuned on a pick's rate) need not minimise the spread:
        # PPI++'s own choice, between two candidates, on estimated spreads (not where intervals lie).
        how = f"labels only (lambda = 0), their interval shorter than that of {how}"
        lam, est, se, q = 0.0, labels_est, labels_se, labels_q
    floored = cl.floor_variance(c, j, idx, lam, design) >= se**2
    # The functional cannot leave [sum of negative coefficients, sum of positive ones].
    bounds = float(c[c < 0].sum()), float(c[c > 0].sum())
    return PPIEstimate(
        estimate=min(max(est, bounds[0]), bounds[1]), low=bounded(est, q * se, *bounds)[0],
        high=bounded(est, q * se, *bounds)[1], judge_only=float((c * j).sum()),
        labels_only=bounded(labels_est, labels_q * labels_se, *bounds), n_labelled=len(idx),
        n_unlabelled=m - len(idx), method=_method(how, design, c, floored, q), se=se, labels_se=labels_se, lam=lam,
        quantile=q, labels_quantile=labels_q,
    )


def bounded(est: float, half: float, floor: float, ceil: float) -> tuple[float, float]:
    """est +- half clipped to the figure's range; the whole range when it lies wholly outside (both
    ends clipped to one edge would claim a zero-width interval the data contradict).

    >>> bounded(0.1, 0.2, 0.0, 1.0), bounded(1.5, 0.2, 0.0, 1.0)
    ((0.0, 0.30000000000000004), (0.0, 1.0))
    """
    low, high = est - half, est + half
    if high <= floor or low >= ceil:
        return floor, ceil
    return max(low, floor), min(high, ceil)


def _design(c: np.ndarray, idx: np.ndarray, w: np.ndarray | None, clusters: Sequence[Any] | None,
            strata: Sequence[Any] | None) -> cl.Design:
    cls = None
    if clusters is not None:
        cls = np.asarray(clusters)
        if len(cls) != len(c):
            raise UserError(f"ppi: {len(cls)} prompt ids for {len(c)} judged responses")
        cls = np.unique(cls.astype(str) if cls.dtype == object else cls, return_inverse=True)[1].ravel()
    st = None
    if strata is not None:
        st = np.asarray([str(x) for x in strata])
        if len(st) != len(idx):
            raise UserError(f"ppi: {len(st)} strata for {len(idx)} labelled responses")
    elif w is not None:
        st = np.round(w, 9)  # a stratified sample's rows of one stratum share its weight
    return cl.Design(clusters=cls, strata=st, weights=w)


def _method(how: str, design: cl.Design, c: np.ndarray, floored: bool, q: float) -> str:
    """The method line: the lambda actually used, the interval, the clustering and the design."""
    parts = [how + f", t interval (quantile {q:.2f}, on the Satterthwaite degrees of freedom of the variance)"]
    if design.clusters is not None:
        parts.append(f"clustered by prompt ({len(set(design.clusters[c != 0].tolist()))} prompts)")
    else:
        parts.append("responses treated as independent (no prompt ids)")
    if design.weights is not None:
        parts.append(f"stratified estimator ({len(set(np.asarray(design.strata).tolist()))} strata, labelled rows weighted)")
    parts.append("variance floored at one pseudo-disagreement per stratum (the floor set this interval: too few "
                 "disagreements to measure the judge's error)" if floored else
                 "variance at least one pseudo-disagreement per stratum (not binding)")
    return "; ".join(parts)


def _t_quantile(tail: float, df: float) -> float:
    """The t quantile at `tail` with `df` degrees of freedom (at least 1).

    >>> round(_t_quantile(0.975, 1000), 3), round(_t_quantile(0.975, 4), 3)
    (1.962, 2.776)
    """
    from scipy.stats import t

    return float(t.ppf(tail, max(df, 1.0)))


def z_quantile(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))


def independent_difference(a: PPIEstimate, b: PPIEstimate, confidence: float = 0.95) -> PPIEstimate:
    """A − B for two PPI estimates from independent samples (two runs, each corrected by its
    own labels): the difference of the estimates, its half-width the two half-widths (standard error
    times t quantile, normal where none is recorded) added in quadrature; the same for the judge-only
    figures and the labels-only intervals. Clipped to [-1, 1], the range of a difference of two rates.

    >>> a = PPIEstimate(0.30, 0.20, 0.40, 0.35, (0.15, 0.45), 20, 80, "m", se=0.10 / 1.959964, labels_se=0.15 / 1.959964)
    >>> b = PPIEstimate(0.10, 0.05, 0.15, 0.12, (0.02, 0.20), 30, 70, "m", se=0.05 / 1.959964, labels_se=0.09 / 1.959964)
    >>> d = independent_difference(a, b)
    >>> round(d.estimate, 3), round(d.judge_only, 3), round(d.high - d.estimate, 4), d.n_labelled, d.n_unlabelled
    (0.2, 0.23, 0.1118, 50, 150)
    >>> [round(x, 3) for x in d.labels_only]
    [0.015, 0.365]
    """
    z = z_quantile(confidence)
    q = lambda x: z if math.isnan(x) else x  # noqa: E731
    est = a.estimate - b.estimate
    se = math.hypot(a.se, b.se)
    half = math.hypot(q(a.quantile) * a.se, q(b.quantile) * b.se)
    # Centred on the labels-only intervals' midpoints: the labels-only point itself for a CLT
    # interval, the Wilson centre (shrunk towards 1/2) for a uniform sample's rate.
    labels_mid = (sum(a.labels_only) - sum(b.labels_only)) / 2
    labels_se = math.hypot(a.labels_se, b.labels_se)
    labels_half = math.hypot(q(a.labels_quantile) * a.labels_se, q(b.labels_quantile) * b.labels_se)
    clip = lambda x: min(max(x, -1.0), 1.0)  # noqa: E731
    return PPIEstimate(
        estimate=clip(est), low=clip(est - half), high=clip(est + half), judge_only=a.judge_only - b.judge_only,
        labels_only=(clip(labels_mid - labels_half), clip(labels_mid + labels_half)),
        n_labelled=a.n_labelled + b.n_labelled, n_unlabelled=a.n_unlabelled + b.n_unlabelled,
        method="difference of two independent estimates (" + a.method + "), half-widths added in quadrature", se=se,
        labels_se=labels_se,
    )


def ppi_rate(judge: Sequence[bool], labelled: Sequence[int], labels: Sequence[bool],
             weights: Sequence[float] | None = None, confidence: float = 0.95,
             clusters: Sequence[Any] | None = None, strata: Sequence[Any] | None = None) -> PPIEstimate:
    """The human acknowledgment rate over all judged responses; labels-only interval: Wilson
    (uniform sample) or the weighted classical one (stratified sample).

    Ten responses, four labelled; the judge misses one acknowledgment among them. Labels alone
    say 0.5; with one disagreement lambda is not tuned (`clustered.choose_lambda`), and plain PPI
    (lambda = 1) would say 0.3 + 0.25 = 0.55, but with the judge's spread over ten responses added
    its interval is the longer one, so the labels' own (lambda = 0) is shown.

    >>> judge = [True, False, False, False, True, False, False, False, True, False]
    >>> r = ppi_rate(judge, [0, 1, 2, 3], [True, True, False, False])
    >>> round(r.judge_only, 3), round(r.estimate, 3), r.lam, r.n_labelled, r.n_unlabelled
    (0.3, 0.5, 0.0, 4, 6)
    >>> [round(x, 3) for x in r.labels_only]
    [0.15, 0.85]
    >>> r.low <= r.estimate <= r.high
    True
    """
    m = len(judge)
    est = ppi_linear([1.0 / m] * m, judge, labelled, labels, weights, confidence, clusters, strata)
    if weights is None:
        k = sum(bool(v) for v in labels)
        est = replace(est, labels_only=wilson_interval(k, len(labels), z=z_quantile(confidence)))
    return est


def ppi_difference(coef_a: Sequence[float], coef_b: Sequence[float], judge: Sequence[bool], labelled: Sequence[int],
                   labels: Sequence[bool], weights: Sequence[float] | None = None,
                   confidence: float = 0.95, clusters: Sequence[Any] | None = None) -> PPIEstimate:
    """Rate A − rate B on the same responses (paired: each rate's coefficients over the same
    judged set, e.g. best-of-N pick weights under RM_D and RM, or orig vs cf shares).

    >>> a, b = [0.5, 0.0, 0.5, 0.0], [0.0, 0.5, 0.0, 0.5]
    >>> ppi_difference(a, b, [True, False, True, False], [0, 1, 2, 3], [False, False, True, False]).estimate
    0.5
    """
    if len(coef_a) != len(coef_b):
        raise UserError(f"ppi: {len(coef_a)} and {len(coef_b)} coefficients for the two rates")
    diff = [float(x) - float(y) for x, y in zip(coef_a, coef_b, strict=True)]
    return ppi_linear(diff, judge, labelled, labels, weights, confidence, clusters)


def rogan_gladen(rate: float, sensitivity: float, specificity: float) -> float:
    """The true rate a judge-only `rate` implies if the judge's sensitivity and specificity
    carry over (Rogan & Gladen 1978), clipped to [0, 1]; nan when the judge is no better than
    chance (sensitivity + specificity <= 1).

    >>> round(rogan_gladen(0.3, 0.8, 0.95), 4)
    0.3333
    >>> rogan_gladen(0.01, 0.8, 0.95), rogan_gladen(0.5, 0.5, 0.5)
    (0.0, nan)
    """
    youden = sensitivity + specificity - 1
    if not youden > 0 or not all(math.isfinite(x) for x in (rate, sensitivity, specificity)):
        return float("nan")
    return min(max((rate + specificity - 1) / youden, 0.0), 1.0)
