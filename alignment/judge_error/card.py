"""The judge card: how far a judge agrees with human labels, with the numbers a reader needs.

`alignment judge validate --task biasqa --labels FILE [--json] [--part sealed]` prints it: n,
base rate, accuracy with a 95% Wilson interval, Cohen's kappa and balanced accuracy with
intervals, precision / recall / F1 per class, the always-majority and always-"no" baselines, the
confusion matrix and every disagreement with the judge's evidence. Accuracy alone misleads when
one class dominates (always "no" scores 78% on BiasQA), so the card always shows the baselines,
kappa and balanced accuracy next to it.
"""

from __future__ import annotations

from typing import Any

from alignment.judge.base import Verdict

CLASSES = ("no-ack", "ack")


def wilson(successes: int, n: int) -> tuple[float, float]:
    """95% Wilson interval (scipy).

    >>> [round(x, 3) for x in wilson(8, 10)]
    [0.49, 0.943]
    """
    from scipy.stats import binomtest

    if n == 0:
        return float("nan"), float("nan")
    ci = binomtest(successes, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def kappa_interval(accuracy_ci: tuple[float, float], base_rate: float, judge_rate: float) -> tuple[float, float]:
    """Cohen's kappa at the ends of the accuracy's interval, chance agreement held at its observed
    value (p_e = p_h p_j + (1 - p_h)(1 - p_j)): kappa is increasing in the observed agreement, so
    this maps the Wilson interval; p_e's own sampling error is left out. Unlike a bootstrap over
    rows it does not collapse to a point when the judge agrees with every label.

    >>> [round(x, 3) for x in kappa_interval((0.929, 1.0), 0.26, 0.26)]
    [0.815, 1.0]
    """
    p_e = base_rate * judge_rate + (1 - base_rate) * (1 - judge_rate)
    if p_e >= 1:
        return float("nan"), float("nan")
    return tuple(max(-1.0, (a - p_e) / (1 - p_e)) for a in accuracy_ci)  # type: ignore[return-value]


def balanced_accuracy(labels: list[bool], pred: list[bool]) -> tuple[float, tuple[float, float]]:
    """Mean of sensitivity and specificity, and the mean of their 95% Wilson bounds (each class's
    recall bounded on its own; conservative, as both bounds are taken at once). nan without
    both classes among the labels.

    >>> ba, (lo, hi) = balanced_accuracy([True, True, False, False, False], [True, False, False, False, True])
    >>> round(ba, 3), round(lo, 3), round(hi, 3)
    (0.583, 0.151, 0.922)
    """
    pos = [p for p, y in zip(pred, labels, strict=True) if y]
    neg = [not p for p, y in zip(pred, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan"), (float("nan"), float("nan"))
    (sl, sh), (cl, ch) = wilson(sum(pos), len(pos)), wilson(sum(neg), len(neg))
    return (sum(pos) / len(pos) + sum(neg) / len(neg)) / 2, ((sl + cl) / 2, (sh + ch) / 2)


def judge_card(ids: list[str], labels: list[bool], verdicts: list[Verdict], splits: list[str] | None = None) -> dict[str, Any]:
    """The card as plain data (JSON-ready); `splits` adds one accuracy line per split.

    >>> v = [Verdict(True, "a"), Verdict(False, "b"), Verdict(False, "c"), Verdict(False, "d")]
    >>> c = judge_card(["r1", "r2", "r3", "r4"], [True, True, False, False], v)
    >>> c["n"], c["base_rate"], c["accuracy"], c["majority_baseline"], c["confusion"]
    (4, 0.5, 0.75, 0.5, [[2, 0], [1, 1]])
    >>> c["per_class"]["ack"]["recall"], c["disagreements"]
    (0.5, [{'id': 'r2', 'label': True, 'judge': False, 'evidence': 'b'}])
    """
    from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

    n = len(labels)
    pred = [v.ack for v in verdicts]
    ok = sum(p == y for p, y in zip(pred, labels, strict=True))
    positives = sum(labels)
    low, high = wilson(ok, n)
    majority = max(positives, n - positives)
    p, r, f, s = precision_recall_fscore_support(labels, pred, labels=[False, True], zero_division=0)
    # kappa is undefined (nan) when both raters use one class only; report it as such.
    kappa = float(cohen_kappa_score(labels, pred, labels=[False, True])) if len(set(labels) | set(pred)) > 1 else float("nan")
    ba, ba_ci = balanced_accuracy(list(labels), pred)
    card: dict[str, Any] = {
        "n": n,
        "base_rate": positives / n,
        "accuracy": ok / n,
        "accuracy_ci95": [low, high],
        "correct": ok,
        "kappa": kappa,
        "kappa_ci95": list(kappa_interval((low, high), positives / n, sum(pred) / n)) if kappa == kappa else [kappa, kappa],
        "balanced_accuracy": ba,
        "balanced_accuracy_ci95": list(ba_ci),
        # Saying "no" to every response: accuracy = the no-ack share, balanced accuracy 0.5, kappa 0.
        "always_no_baseline": {"accuracy": (n - positives) / n, "balanced_accuracy": 0.5, "kappa": 0.0},
        "majority_baseline": majority / n,
        "majority_class": "ack" if positives > n - positives else "no-ack",
        "per_class": {
            name: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]), "support": int(s[i])}
            for i, name in enumerate(CLASSES)
        },
        "confusion": confusion_matrix(labels, pred, labels=[False, True]).tolist(),
        "unparsed": sum(not v.parsed for v in verdicts),
        "disagreements": [
            {"id": i, "label": y, "judge": v.ack, "evidence": v.raw}
            for i, y, v in zip(ids, labels, verdicts, strict=True)
            if v.ack != y
        ],
    }
    if splits and any(splits):
        card["splits"] = {}
        for split in sorted(set(splits) - {""}):
            idx = [k for k, sp in enumerate(splits) if sp == split]
            good = sum(pred[k] == labels[k] for k in idx)
            card["splits"][split] = {"n": len(idx), "correct": good, "accuracy": good / len(idx), "ci95": list(wilson(good, len(idx)))}
    return card


def format_card(card: dict[str, Any], title: str, evidence_chars: int = 300) -> str:
    """The card as text for a terminal."""
    low, high = card["accuracy_ci95"]
    cm = card["confusion"]
    lines = [
        title,
        f"n: {card['n']}   base rate (human ack): {card['base_rate']:.3f}",
        f"accuracy: {card['accuracy']:.3f} (n={card['n']}), 95% CI [{low:.3f}, {high:.3f}] (Wilson)",
        f"Cohen's kappa: {card['kappa']:.3f}, 95% CI [{card['kappa_ci95'][0]:.3f}, {card['kappa_ci95'][1]:.3f}]"
        " (Wilson on agreement, chance agreement fixed)",
        f"balanced accuracy: {card['balanced_accuracy']:.3f}, 95% CI [{card['balanced_accuracy_ci95'][0]:.3f}, "
        f"{card['balanced_accuracy_ci95'][1]:.3f}] (mean of per-class Wilson bounds)",
        f"always-{card['majority_class']} baseline: {card['majority_baseline']:.3f}",
        f"always-no baseline: accuracy {card['always_no_baseline']['accuracy']:.3f}, balanced accuracy 0.500, kappa 0.000",
        "class     precision  recall     f1  support",
    ]
    for name in CLASSES:
        m = card["per_class"][name]
        lines.append(f"{name:<8} {m['precision']:>10.3f} {m['recall']:>7.3f} {m['f1']:>6.3f} {m['support']:>8}")
    lines += [
        "confusion matrix (rows: human label, columns: judge)",
        "            no-ack   ack",
        f"  no-ack  {cm[0][0]:>7} {cm[0][1]:>5}",
        f"  ack     {cm[1][0]:>7} {cm[1][1]:>5}",
        f"unparseable judge outputs (counted as no-ack): {card['unparsed']}",
    ]
    for split, s in card.get("splits", {}).items():
        lines.append(
            f"split {split}: accuracy {s['accuracy']:.3f} ({s['correct']}/{s['n']}), 95% CI [{s['ci95'][0]:.3f}, {s['ci95'][1]:.3f}]"
        )
    lines.append(f"disagreements: {len(card['disagreements'])}")
    for d in card["disagreements"]:
        evidence = d["evidence"].replace("\n", " ")
        evidence = evidence if len(evidence) <= evidence_chars else evidence[:evidence_chars] + "..."
        lines.append(f"  {d['id']}: human {'ack' if d['label'] else 'no-ack'}, judge {'ack' if d['judge'] else 'no-ack'}: {evidence}")
    return "\n".join(lines)
