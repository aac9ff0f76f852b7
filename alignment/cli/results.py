"""`alignment results render [--check]`: every page under `results/` rendered from its data file.

A figure on a results page must come from a committed machine-readable file that the command
which measured it wrote (small JSON or CSV summaries, not run folders). Each page here is a
function of one such file: `results/ppi_validation.json` (written by `python -m
alignment.measure.ppi_validation`), `results/embedded_seeds.csv` (rows of `alignment sweep`'s
sweep.csv), `results/bench.json` (`alignment bench --json`), `results/organism_base_rates.json`
(`python -m alignment.measure.organism_base_rates --record`), `results/sweep_<name>.json` (a copy of
`alignment sweep`'s `record.json`). Pages whose figures no committed
file backs are listed in `results/withdrawn.json` (no figures in it: what was withdrawn, why,
the command that re-measures it, and the commit that still shows the old page), and render as a
withdrawal notice. `--check` renders into memory and fails (exit 2, naming the page) when a
committed page differs; the test suite runs it, so a hand edit of a page fails `make test`.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.errors import UserError
from alignment.store import write_text

RESULTS = Path("results")
HEADER = "<!-- Rendered by `alignment results render` from {source}; edit the data file, not this page. -->\n\n"


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: cannot read the page's data file ({e})") from None


def render_ppi(path: Path) -> str:
    """`results/ppi_validation.md` from the JSON `alignment.measure.ppi_validation` writes beside it."""
    from alignment.measure.ppi_validation import Simulation, markdown

    data = _load_json(path)
    return markdown([Simulation(**s) for s in data["simulations"]], data["command"])


def render_grid(path: Path) -> str:
    """`results/ppi_grid.md` from the JSON `alignment judge grid` writes beside it."""
    from alignment.measure.validation_grid import JudgeErrors, markdown

    data = _load_json(path)
    return markdown(data["cells"], [JudgeErrors(**e) for e in data["judges"]], data["targets"], data["command"])


def _ci(r: Any) -> str:
    return f"{100 * r.estimate:+.1f} [{100 * r.low:+.1f}, {100 * r.high:+.1f}]"


def render_seeds(path: Path) -> str:
    """`results/embedded_seeds.md` from the sweep rows in `embedded_seeds.csv`: per sample count and
    estimator, each seed's criteria (points, 95% paired bootstrap over that seed's prompts)."""
    df = pd.read_csv(path)
    lines = ["# Seed sweep: `configs/embedded_default.yaml`, 12 examples per seed", "",
             "Rows of `alignment sweep configs/embedded_default.yaml --seeds S --out DIR` (each run's `sweep.csv`), "
             "combined in `results/embedded_seeds.csv`; its `samples`, `estimator` and `role` columns say which rows "
             "are which. Points; each interval is a 95% paired bootstrap over one generation seed's prompts (not "
             "pooled over seeds); *(no)*: the interval does not exclude 0 in the direction the criterion claims "
             "(`alignment.sweep`).", ""]
    crit = [c for c in ("rm_d_vs_rm", "control", "hide", "control_all") if c in set(df["criterion"])]
    for (samples, estimator), g in df.groupby(["samples", "estimator"], sort=False):
        head = g[g["criterion"].isin(["rm_d_vs_rm", "control"])].groupby("seed")["holds"].all()
        lines += [f"## {samples} samples per prompt, estimator `{estimator}`", "",
                  f"Both headline criteria (rm_d_vs_rm, control) hold on **{int(head.sum())} of {len(head)}** seeds.", "",
                  "| seed | role | N | " + " | ".join(crit) + " |", "|---:|---|---:|" + "---|" * len(crit)]
        for seed, s in g.groupby("seed", sort=True):
            by = {r.criterion: r for r in s.itertuples(index=False)}
            cells = [(_ci(by[c]) + ("" if by[c].holds else " (no)")) if c in by else "n/a" for c in crit]
            lines.append(f"| {seed} | {s['role'].iloc[0]} | {int(s['N'].max())} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def render_bench(path: Path) -> str:
    """`results/bench.md` from `alignment bench --json`'s output in `bench.json`, key by key; a
    `bench_<name>.json` that `alignment bench --record` wrote names its command, CPU and commit."""
    data = _load_json(path)
    if "figures" in data:
        intro = (f"Written by `{data['command']} --record results/{path.name}` at commit {data['commit']}; CPU: "
                 f"{data['cpu']}. Ratios compare arms timed in the same run (the command's docs say what each times).")
        data = data["figures"]
    else:
        intro = ("The figures of `results/bench.json`, as `alignment bench --json` wrote them (the commit that "
                 "added the file says when and on which machine). Earlier hand-typed sections of this page are "
                 "withdrawn: no committed file backs them (`git show 67030c9:results/bench.md` shows them). The "
                 "DPO reference-sharing and dpo-eval lines are on results/bench_dpo.md where that file exists.")
    rows = [f"| `{k}` | {v:.4g} |" if isinstance(v, float) else f"| `{k}` | {v} |" for k, v in data.items()]
    return "\n".join([f"# `alignment bench`{'' if path.stem == 'bench' else ': ' + path.stem.removeprefix('bench_')}", "",
                      intro, "", "| field | value |", "|---|---|", *rows, ""])


def render_base_rates(path: Path) -> str:
    """`results/organism_base_rates.md` from the rows `alignment.measure.organism_base_rates --record` wrote."""
    from alignment.measure.organism_base_rates import page

    return page(_load_json(path))


def render_sweep(path: Path) -> str:
    """`results/sweep_<name>.md` from a copy of an `alignment sweep` run's `record.json`."""
    from alignment.cli.sweep import record_markdown

    return record_markdown(_load_json(path))


def render_withdrawn(path: Path, page: str) -> str:
    entry = _load_json(path).get(page)
    if not entry:
        raise UserError(f"{path}: no entry for page {page!r}")
    return "\n".join([f"# {entry['title']}", "", "**Figures withdrawn until re-measured.** " + entry["reason"], "",
                      f"Re-measure with `{entry['remeasure']}`; the command's machine-readable output belongs under "
                      "`results/`, with this page rendered from it.", "",
                      f"The withdrawn page: `git show {entry['commit']}:results/{page}.md`.", ""])


def pages(root: Path = RESULTS) -> dict[str, tuple[Path, Callable[[], str]]]:
    """Page name -> (its data file, its renderer)."""
    from alignment.measure.hash_overhead import page as hash_page
    from alignment.measure.hint_run import page as hint_page
    from alignment.measure.rm_ranks import page as rm_page

    fixed: dict[str, tuple[str, Callable[[Path], str]]] = {
        "ppi_validation": ("ppi_validation.json", render_ppi), "embedded_seeds": ("embedded_seeds.csv", render_seeds),
        "bench": ("bench.json", render_bench), "ppi_grid": ("ppi_grid.json", render_grid),
        "organism_base_rates": ("organism_base_rates.json", render_base_rates),
        "hash_overhead": ("hash_overhead.json", lambda path: hash_page(_load_json(path))),
        "organism_rm_ranks": ("organism_rm_ranks.json", lambda path: rm_page(_load_json(path))),
        "hints_embedded": ("hints_embedded.json", lambda path: hint_page(_load_json(path))),
    }
    # A page is rendered where its data file is committed (a copy of results/ may hold only some).
    out: dict[str, tuple[Path, Callable[[], str]]] = {
        name: (root / file, lambda fn=fn, path=root / file: fn(path))
        for name, (file, fn) in fixed.items() if (root / file).is_file()}
    for path in sorted(root.glob("bench_*.json")):  # further `alignment bench --json` lines, one file each
        out[path.stem] = (path, lambda path=path: render_bench(path))
    for path in sorted(root.glob("run_diff_*.json")):  # `python -m alignment.measure.run_diff A B --json`
        from alignment.measure.run_diff import page as diff_page

        out[path.stem] = (path, lambda path=path: diff_page(_load_json(path)))
    for path in sorted(root.glob("sweep_*.json")):
        out[path.stem] = (path, lambda path=path: render_sweep(path))
    withdrawn = root / "withdrawn.json"
    if withdrawn.is_file():
        for page in _load_json(withdrawn):
            out[page] = (withdrawn, lambda page=page: render_withdrawn(withdrawn, page))
    return out


def render(root: Path = RESULTS, check: bool = False) -> list[str]:
    """Render every page (or, with `check`, compare with the committed page); the pages that differ."""
    stale = []
    for name, (source, fn) in pages(root).items():
        text = HEADER.format(source=f"results/{source.name}") + fn().rstrip() + "\n"
        page = root / f"{name}.md"
        if check:
            if not page.is_file() or page.read_text() != text:
                stale.append(str(page))
        else:
            write_text(page, text)
    return stale


def cmd_results(args: argparse.Namespace) -> int:
    stale = render(Path(args.dir), args.check)
    if stale:
        raise UserError(f"results pages differ from their data files: {', '.join(stale)} (run `alignment results render`)")
    print("results: every page matches its data file" if args.check else f"results: rendered {len(pages(Path(args.dir)))} pages")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("results", help="render every results/ page from its committed data file (--check: fail if one differs)")
    p.add_argument("action", choices=["render"], help="render (the only action)")
    p.add_argument("--check", action="store_true", help="render in memory and fail when a committed page differs")
    p.add_argument("--dir", default=str(RESULTS), help="the results folder (default results/)")
    p.set_defaults(func=cmd_results)
