"""The report's two figures, drawn from `evaluate/metrics.csv` (matplotlib, Agg backend).

`consistency_figure`: paired consistency per control type, one bar per model with its 95%
interval. `debt_figure`: reason debt against realised accepted-change coverage on the locked
test, one line per model (one point per calibration coverage target), with intervals on debt.
Each returns False, writing nothing, when the metrics hold nothing to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from alignment.store import atomic_path

MODEL = ["regime", "learner", "target"]


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: Path) -> None:
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, dpi=120, format="png")


def _label(key: tuple) -> str:
    regime, learner, target = key
    return f"{learner}/{target}" + ("" if regime == "standard" else f" ({regime})")


def consistency_figure(metrics: pd.DataFrame, path: Path) -> bool:
    sel = metrics[(metrics["table"] == "consistency") & (metrics["metric"] == "consistency")
                  & ~metrics["group"].str.contains("/")]  # fmt: skip
    if sel.empty:
        return False
    plt = _plt()
    kinds = sorted(sel["group"].unique())
    groups = list(sel.groupby(MODEL, sort=True))
    width = 0.8 / len(groups)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(kinds) + 0.3 * len(groups)), 4))
    for i, (key, g) in enumerate(groups):
        g = g.set_index("group").reindex(kinds)
        x = np.arange(len(kinds)) + i * width
        est = 100 * g["estimate"].to_numpy(dtype=float)
        err = np.vstack([est - 100 * g["low"].to_numpy(dtype=float), 100 * g["high"].to_numpy(dtype=float) - est])
        ax.bar(x, est, width, yerr=err, capsize=2, label=_label(key))
    ax.set_xticks(np.arange(len(kinds)) + 0.4 - width / 2, kinds)
    ax.set_ylabel("pairs obeying the relation (%)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Paired consistency per control (95% intervals)")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return True


def debt_figure(metrics: pd.DataFrame, path: Path) -> bool:
    sel = metrics[metrics["table"] == "selective"]
    if sel.empty:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, g in sel.groupby(MODEL, sort=True):
        cov = g[g["metric"] == "coverage"].set_index("group")["estimate"]
        debt = g[g["metric"] == "reason_debt"].set_index("group")
        both = cov.index.intersection(debt.index)
        if both.empty:
            continue
        c, d = 100 * cov[both].to_numpy(dtype=float), debt.loc[both]
        est = 100 * d["estimate"].to_numpy(dtype=float)
        err = np.vstack([est - 100 * d["low"].to_numpy(dtype=float), 100 * d["high"].to_numpy(dtype=float) - est])
        order = np.argsort(c)
        ax.errorbar(c[order], est[order], yerr=err[:, order], marker="o", capsize=2, label=_label(key))
    ax.set_xlabel("realised accepted-change coverage on the locked test (%)")
    ax.set_ylabel("reason debt (%)")
    ax.legend(fontsize=7)
    ax.set_title("Reason debt against coverage (thresholds from calibration)")
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return True
