"""The variance of a prediction-powered figure when responses share prompts and labels are stratified.

A figure is theta = sum_k c_k y_k over the judged responses (`alignment.judge_error.ppi`). Its
prediction-powered estimate is

    theta_hat = lam * sum_k c_k f_k + sum_h (N_h / n_h) sum_{i in S_h} c_i (y_i - lam * f_i)

with f the judge's verdicts on all M responses, S_h the n_h labelled responses drawn at random
from stratum h's N_h (one stratum of M for a uniform sample). It is the point estimate
`ppi_py.ppi_mean_pointestimate` gives with the weights N_h / n_h; `ppi_py` has no clustered or
stratified variance, so that part is here.

The estimand is the policy's rate over the task's prompts, what the report's bootstrap over
prompts estimates: prompts are the independent units and the 16 samples of one prompt are not.
So the variance is the sandwich (linearisation) variance over prompt clusters: theta_hat is a sum
of per-prompt terms, and each prompt's influence is its judge part minus the average prompt's
plus its labelled residuals centred on their stratum's mean (centring within strata is what a
stratified sample earns over a uniform one). Both the between-prompt spread of the judge's rate
and of the judge's error enter; a paired difference uses the difference of coefficients on the
same clusters, so its two rates stay paired.

Small samples: with few disagreements between judge and labels the residuals' spread is
estimated as (nearly) 0 and the interval would collapse. The variance is floored at the judge
part's plus one pseudo-disagreement per stratum, of the stratum's typical coefficient (the point
estimate is unchanged), so the interval never claims more than the labels can support; and lam
is then 1 (plain PPI), since a tuned lam is unstable there. The quantile is a t one on the variance's
Satterthwaite degrees of freedom (`degrees_of_freedom`): a variance a few prompts carry is uncertain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEW_DISAGREEMENTS = 5  # below this, lam is not tuned (plain PPI) and the method line says why


@dataclass(frozen=True)
class Design:
    """How the labelled responses were drawn. `clusters`: a prompt code per judged response (None:
    every response its own prompt); `strata`: a stratum code per labelled response (None: one);
    `weights`: N_h / n_h per labelled response (None: M / n, a uniform sample)."""

    clusters: np.ndarray | None = None
    strata: np.ndarray | None = None
    weights: np.ndarray | None = None
    # The stratum of every judged response (same codes as `strata`), when known: stratum sizes
    # then vary with the prompts drawn, and that variance is counted too.
    population_strata: np.ndarray | None = None


def _codes(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1].ravel()


def influences(c: np.ndarray, f: np.ndarray, idx: np.ndarray, y: np.ndarray, lam: float,
               design: Design) -> np.ndarray:
    """Each prompt's influence on theta_hat (they sum to 0); the variance is G/(G-1) times the sum
    of their squares.

    Two prompts of two responses, all labelled, the judge right everywhere: only the judge part
    varies between prompts.

    >>> c, f = np.full(4, 0.25), np.array([1.0, 1.0, 0.0, 0.0])
    >>> influences(c, f, np.arange(4), f, 1.0, Design(clusters=np.array([0, 0, 1, 1]))).tolist()
    [0.25, -0.25]
    """
    m = len(c)
    groups = _groups(design, m)
    g = int(groups.max()) + 1
    u = judge_influences(c, f, lam, design)
    strata = _codes(design.strata) if design.strata is not None else np.zeros(len(idx), dtype=int)
    w = design.weights if design.weights is not None else np.full(len(idx), m / len(idx))
    d = c[idx] * (y - lam * f[idx])
    for h in np.unique(strata):
        s = strata == h
        u += np.bincount(groups[idx][s], weights=w[s] * (d[s] - d[s].mean()), minlength=g)
    if design.population_strata is not None:
        # The stratum's correction is its size times its mean residual; each prompt holds its own
        # share of the stratum, which varies between prompts.
        raw = design.strata if design.strata is not None else np.zeros(len(idx))
        for h in np.unique(raw):
            size = np.bincount(groups[design.population_strata == h], minlength=g).astype(float)
            u += d[raw == h].mean() * (size - size.sum() / g)
    return u


def _groups(design: Design, m: int) -> np.ndarray:
    if design.clusters is None:
        return np.arange(m)
    c = design.clusters
    # Codes 0..G-1 already (as `ppi.ppi_linear` passes them): skip the sort.
    if c.dtype.kind in "iu" and c.min() == 0 and len(np.bincount(c)) == int(c.max()) + 1 and np.bincount(c).all():
        return c
    return _codes(c)


def judge_influences(c: np.ndarray, f: np.ndarray, lam: float, design: Design) -> np.ndarray:
    """Each prompt's judge part minus the average prompt's, times lam.

    >>> judge_influences(np.full(4, 0.25), np.array([1.0, 1, 0, 0]), 0.5, Design(clusters=np.array(["a", "a", "b", "b"]))).tolist()
    [0.125, -0.125]
    """
    groups = _groups(design, len(c))
    judge = np.bincount(groups, weights=c * f, minlength=int(groups.max()) + 1)
    return lam * (judge - judge.sum() / len(judge))


def variance(u: np.ndarray) -> float:
    """G/(G-1) * sum of squared influences (the small-sample factor of a cluster sandwich).

    >>> variance(np.array([0.25, -0.25]))
    0.25
    """
    g = len(u)
    return float(g / max(g - 1, 1) * (u @ u))


def pseudo_variance(c: np.ndarray, idx: np.ndarray, design: Design) -> float:
    """One unseen disagreement per stratum (`pseudo_terms`, summed).

    Uniform sample of 30 of 2,000 responses, a rate (c = 1/2,000): 1/30**2.

    >>> round(pseudo_variance(np.full(2000, 1 / 2000), np.arange(30), Design()) * 900, 6)
    1.0
    """
    return float(sum(pseudo_terms(c, idx, design)))


def pseudo_terms(c: np.ndarray, idx: np.ndarray, design: Design) -> list[float]:
    """Per stratum with labelled responses in the figure: its weight squared times their mean
    squared coefficient."""
    strata = _codes(design.strata) if design.strata is not None else np.zeros(len(idx), dtype=int)
    w = design.weights if design.weights is not None else np.full(len(idx), len(c) / len(idx))
    ci = c[idx]
    return [float(np.mean(w[s]) ** 2 * np.mean(ci[s] ** 2)) for h in np.unique(strata)
            if (s := (strata == h) & (ci != 0)).any()]


def guarded_variance(c: np.ndarray, f: np.ndarray, idx: np.ndarray, y: np.ndarray, lam: float,
                     design: Design) -> float:
    """The clustered variance, but never below the judge part's plus one pseudo-disagreement per
    stratum: with few disagreements the residuals' estimated spread is (nearly) 0, with many the
    floor does not bind.

    30 labels of 2,000 responses, every label agreeing with a judge that is right everywhere: the
    residual spread is 0, so the floor (1/30 squared, plus the judge part's) is the variance.

    >>> f = np.zeros(2000); f[::40] = 1; c = np.full(2000, 1 / 2000); idx = np.arange(1, 31)
    >>> v = guarded_variance(c, f, idx, f[idx], 1.0, Design())
    >>> round(v * 900, 2)
    1.01
    """
    return max(variance(influences(c, f, idx, y, lam, design)), floor_variance(c, f, idx, lam, design))


def floor_variance(c: np.ndarray, f: np.ndarray, idx: np.ndarray, lam: float, design: Design) -> float:
    """The judge part's variance plus one pseudo-disagreement per stratum (`guarded_variance`)."""
    return variance(judge_influences(c, f, lam, design)) + pseudo_variance(c, idx, design)


def degrees_of_freedom(c: np.ndarray, f: np.ndarray, idx: np.ndarray, y: np.ndarray, lam: float,
                       design: Design) -> float:
    """Satterthwaite's degrees of freedom of the guarded variance, a sum of squared influences u:
    2 over its squared coefficient of variation, sum u**4 / (sum u**2)**2 - 1/G, estimated from their
    kurtosis; between 1 and G - 1. Many comparable influences give about G (the normal quantile);
    k spikes about 2k (a few disagreements, a pick's top-ranked labels, a rare rate's positives: a
    variance from a few terms is itself uncertain). Where the floor sets the variance its terms are
    the judge part's influences and one pseudo-disagreement per stratum, each a single event (none
    seen among n uniform labels: a rate's half-width about 4.3/n, near the exact binomial 3.7/n).

    >>> f = np.zeros(40); c = np.full(40, 1 / 40); y = f.copy(); y[::2] = 1; y3 = f.copy(); y3[:3] = 1
    >>> [round(degrees_of_freedom(c, f, np.arange(40), v, 0.0, Design()), 1) for v in (y, y3)]
    [39.0, 7.7]
    """
    u = influences(c, f, idx, y, lam, design)
    g = len(u)
    if variance(u) < floor_variance(c, f, idx, lam, design):
        pseudo = np.sqrt(np.array(pseudo_terms(c, idx, design)) * (g - 1) / g)
        u = np.concatenate([judge_influences(c, f, lam, design), pseudo])
    s2 = float(u @ u)
    excess = float((u**4).sum()) / s2**2 - 1 / g if s2 > 0 else 0.0
    return float(min(max(2 / excess, 1.0), g - 1)) if excess > 0 else float(max(g - 1, 1))


def tuned_lambda(c: np.ndarray, f: np.ndarray, idx: np.ndarray, y: np.ndarray, design: Design) -> float:
    """The lam in [0, 1] that minimises the clustered variance (influences are linear in lam).

    A judge that is always right earns lam near 1 (not quite: the judge's own sampling over the
    400 responses is variance too); one unrelated to the labels lam near 0.

    >>> rng = np.random.default_rng(0); y = (rng.random(400) < 0.3).astype(float)
    >>> round(tuned_lambda(np.full(400, 1 / 400), y, np.arange(0, 400, 4), y[::4], Design()), 2)
    0.98
    >>> tuned_lambda(np.full(400, 1 / 400), rng.permutation(y), np.arange(0, 400, 4), y[::4], Design()) < 0.3
    True
    """
    a = influences(c, f, idx, y, 0.0, design)
    b = influences(c, f, idx, y, 1.0, design) - a
    if not (b @ b) > 0:
        return 0.0
    return float(min(max(-(a @ b) / (b @ b), 0.0), 1.0))


def disagreements(c: np.ndarray, f: np.ndarray, idx: np.ndarray, y: np.ndarray) -> int:
    """Labelled responses in the figure (c != 0) where the judge and the label differ.

    >>> disagreements(np.array([1.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.arange(3), np.array([0.0, 1.0, 0.0]))
    1
    """
    inside = c[idx] != 0
    return int(((y != f[idx]) & inside).sum())


def even_coefficients(c: np.ndarray) -> bool:
    """Whether every response in the figure counts the same (a rate, or a difference of two rates
    on disjoint responses); best-of-N pick weights are uneven.

    >>> even_coefficients(np.array([0.5, -0.5, 0.0])), even_coefficients(np.array([0.7, 0.3]))
    (True, False)
    """
    mags = np.abs(c[c != 0])
    return bool(len(mags) == 0 or np.ptp(mags) <= 1e-12 * mags.max())


def choose_lambda(c: np.ndarray, f: np.ndarray, idx: np.ndarray, y: np.ndarray, design: Design) -> tuple[float, str]:
    """lam and the words that say how it was chosen: 1 (plain PPI) with few disagreements, where
    tuning is unstable; tuned (PPI++) for an even figure; for a best-of-N pick figure tuned on the
    rate over its responses instead of on its weights.

    >>> c = np.full(4, 0.25); f = np.array([1.0, 0, 1, 0])
    >>> choose_lambda(c, f, np.arange(4), f, Design())
    (1.0, 'plain PPI (lambda = 1: only 0 disagreements between judge and labels)')
    """
    k = disagreements(c, f, idx, y)
    if k < FEW_DISAGREEMENTS:
        return 1.0, f"plain PPI (lambda = 1: only {k} disagreements between judge and labels)"
    if not even_coefficients(c):
        # Tuned on the pick weights, lam follows the heavy-tailed correction and keeps the judge's
        # bias; tuned on the rate over the same responses it measures only how well the judge
        # agrees with people there, and still falls towards 0 for a judge that does not.
        support = (c != 0) / max(int((c != 0).sum()), 1)
        lam = tuned_lambda(support, f, idx, y, design)
        return lam, f"PPI (lambda = {lam:.2f}, tuned on the rate over the figure's responses, not on its best-of-N weights)"
    lam = tuned_lambda(c, f, idx, y, design)
    return lam, f"PPI++ (power-tuned lambda = {lam:.2f})"
