"""Method A integration: execute judgment cubes over an example's declared sources with a policy.

`alignment receipts CONFIG --out runs/<name>` (stage `receipts`, see `alignment.stages.receipts`)
calls `run_cubes`; tests drive it with a scripted generator.

Hybrids. A hybrid `T` is a subset of the example's declared sources (`row["sources"]`) rendered at
their counterfactual values by `render_hybrid(row, T)`. Old state = `T = {}` (the original
prompt), new state = every declared source replaced. A hybrid is keyed by `hybrid_key`: its source
names in declared order joined by `+` (`""`, `"book_solution"`, `"book_solution+instruction"`).

Sharing. The policy samples N responses ONCE per (example, hybrid); every cube of the example (the
example-level cube and every original response's cube) reads that one pool. The existing
`generate` samples are reused: variant `orig` is hybrid `{}`, variant `cf` is `{protected}`. Only
sampled responses (`sample >= 0`) form a pool; greedy ones are never mixed in.

Verdicts (answers are option indices, `INVALID = -1` for an unparseable answer, its own value):

- example-level (`example_cube`): the policy's judgment in hybrid T is its *modal* answer over
  the N samples of T. Ties go to the smallest option index, and a valid answer beats INVALID on a
  tie, so the verdict never depends on sample order. This is the principled cube: it is a
  property of the policy at each state, not of any one realised response.
- per response (`response_cube`), the cube analogue of strategy D: for original response r,
  `verdict_r({}) = answer(r)` and for `T != {}` the answer of one sample drawn (seeded) from T's
  pool. The draw for `T = {protected}` uses exactly `attribute`'s generator and index, so
  `cells[{protected}] != cells[{}]` is strategy D's `d` (with `invalid: as_answer`). Other hybrids
  get independent seeded draws, so this cube carries one-sample noise, as D does. Like D's, the
  draws are once per prompt (every response of an example reads the same draw per hybrid) unless
  `attribution.draw` is `per_response`.

Execution is adaptive (`execute_cube`, memoised and counted): hybrids are generated in rounds,
only when some cube asks for them. A round asks, per cube, for the missing endpoints, else for the
missing hybrids of the smallest size (the only ones whose need is already certain); at most k + 1
rounds (one round with `full=True`, which executes all 2^k cells).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from alignment.augment.strategies import draw_counterfactual
from alignment.cache import keyed_dir
from alignment.config import config_hash
from alignment.errors import UserError
from alignment.generation.base import GenerationConfig, Generator, chat_for, sample_seed
from alignment.generation.sampling import batches, response_rows
from alignment.receipts.cube import Cube, Verdict, execute_cube
from alignment.store import read_parquet, write_parquet
from alignment.tasks.base import protected_source, render_hybrid

INVALID = -1
# (example_id, hybrid key) -> answers of the hybrid's sampled responses, in sample order.
Pool = dict[tuple[str, str], list[int]]
Row = Mapping[str, Any]


def source_names(row: Row) -> tuple[str, ...]:
    return tuple(str(s["name"]) for s in row["sources"])


def hybrid_key(subset: Iterable[str], order: Sequence[str]) -> str:
    """`"+"`-joined names in declared order; `""` is the original prompt.

    >>> hybrid_key({"instruction", "book_solution"}, ("book_solution", "instruction"))
    'book_solution+instruction'
    """
    subset = set(subset)
    return "+".join(n for n in order if n in subset)


def parse_hybrid_key(key: str) -> frozenset[str]:
    """>>> sorted(parse_hybrid_key("a+b")), parse_hybrid_key("")
    (['a', 'b'], frozenset())
    """
    return frozenset(key.split("+")) if key else frozenset()


def answer_of(pred: Any) -> int:
    """An option index, or INVALID for a missing / NaN prediction."""
    return INVALID if pred is None or pd.isna(pred) else int(pred)


def modal_answer(answers: Sequence[int]) -> int:
    """The most frequent answer; ties to the smallest option index, valid before INVALID.

    >>> modal_answer([2, 1, 2, 1]), modal_answer([INVALID, 3]), modal_answer([INVALID, INVALID, 0])
    (1, 3, -1)
    """
    if not answers:
        raise UserError("modal_answer: a hybrid with no samples has no verdict")
    counts = Counter(answers)
    return min(counts, key=lambda a: (-counts[a], a == INVALID, a))


class _Pending:
    """Stands in for a hybrid not generated yet; equal to nothing, so it never reproduces."""

    def __repr__(self) -> str:
        return "<pending>"


PENDING = _Pending()


def _recorder(
    fn: Callable[[frozenset[str]], Verdict], has: Callable[[frozenset[str]], bool], missing: set
) -> Callable[[frozenset[str]], Verdict]:
    def verdict_of(t: frozenset[str]) -> Verdict:
        if not has(t):
            missing.add(t)
            return PENDING
        return fn(t)

    return verdict_of


def _example_fns(row: Row, pool: Pool) -> tuple[Callable, Callable]:
    eid, order = str(row["id"]), source_names(row)

    def has(t: frozenset[str]) -> bool:
        return (eid, hybrid_key(t, order)) in pool

    return (lambda t: modal_answer(pool[eid, hybrid_key(t, order)])), has


def _response_fns(
    row: Row, response: Row, pool: Pool, seed: int, per_response: bool = False
) -> tuple[Callable, Callable]:
    eid, order = str(row["id"]), source_names(row)
    sample = int(response["sample"]) if per_response else None  # attribute's draw: once per prompt by default
    protected = frozenset({protected_source(row)})

    def has(t: frozenset[str]) -> bool:
        return not t or (eid, hybrid_key(t, order)) in pool

    def verdict(t: frozenset[str]) -> int:
        if not t:
            return answer_of(response["pred"])
        answers = pool[eid, hybrid_key(t, order)]
        # The draw attribute_example makes, so the protected cell is D's own draw.
        cell = None if t == protected else hybrid_key(t, order)
        return answers[draw_counterfactual(seed, eid, sample, len(answers), cell)]

    return verdict, has


def strategy_d(row: Row, response: Row, pool: Pool, seed: int, per_response: bool = False) -> bool:
    """`attribute`'s `d` read off the response's cube: its protected singleton differs from it.

    Computed outside `execute_cube` because a cube whose endpoints agree never executes it.
    """
    verdict, _ = _response_fns(row, response, pool, seed, per_response)
    return verdict(frozenset({protected_source(row)})) != verdict(frozenset())


def _cube(fns: tuple[Callable, Callable], order: Sequence[str], full: bool) -> tuple[Cube, set]:
    missing: set[frozenset[str]] = set()
    cube = execute_cube(order, _recorder(fns[0], fns[1], missing), full=full)
    return cube, missing


def _needs(missing: set[frozenset[str]], order: Sequence[str], full: bool) -> set[frozenset[str]]:
    """Of the hybrids a pending cube touched, those it certainly needs."""
    if full or not missing:
        return missing
    ends = missing & {frozenset(), frozenset(order)}
    if ends:
        return ends
    smallest = min(len(t) for t in missing)
    return {t for t in missing if len(t) == smallest}


def example_cube(row: Row, pool: Pool, full: bool = False) -> Cube:
    """The example-level cube (modal verdicts); a UserError if a needed hybrid is not in `pool`."""
    order = source_names(row)
    cube, missing = _cube(_example_fns(row, pool), order, full)
    if missing:
        raise UserError(f"example {row['id']}: hybrids not generated: {_keys(missing, order)}")
    return cube


def response_cube(row: Row, response: Row, pool: Pool, seed: int, full: bool = False, per_response: bool = False) -> Cube:
    """One original response's cube (strategy-D draws); `seed` is `attribution.seed`,
    `per_response` its `draw: per_response`."""
    order = source_names(row)
    cube, missing = _cube(_response_fns(row, response, pool, seed, per_response), order, full)
    if missing:
        raise UserError(f"example {row['id']}: hybrids not generated: {_keys(missing, order)}")
    return cube


def _keys(subsets: Iterable[frozenset[str]], order: Sequence[str]) -> list[str]:
    return sorted(hybrid_key(t, order) for t in subsets)


def plan_needs(
    rows: Sequence[Row], responses: Mapping[str, list[Row]], pool: Pool, seed: int, full: bool,
    per_response: bool = False,
) -> list[tuple[str, str]]:
    """(example_id, hybrid key) pairs to generate next, in a fixed order."""
    needs: set[tuple[str, str]] = set()
    for row in rows:
        order, eid = source_names(row), str(row["id"])
        fns = [_example_fns(row, pool)]
        fns += [_response_fns(row, r, pool, seed, per_response) for r in responses.get(eid, [])]
        for f in fns:
            _, missing = _cube(f, order, full)
            needs |= {(eid, hybrid_key(t, order)) for t in _needs(missing, order, full)}
    return sorted(needs)


def pool_from_responses(rows: Sequence[Row], responses: pd.DataFrame) -> Pool:
    """Reuse `generate` samples: `orig` is hybrid `""`, `cf` is the protected source's hybrid."""
    pool: Pool = {}
    by_id = {str(r["id"]): r for r in rows}
    sampled = responses[responses["sample"] >= 0].sort_values(["example_id", "variant", "sample"])
    for (eid, variant), part in sampled.groupby(["example_id", "variant"], sort=True):
        row = by_id.get(str(eid))
        if row is None or variant not in ("orig", "cf"):
            continue
        t = () if variant == "orig" else (protected_source(row),)
        pool[str(eid), hybrid_key(t, source_names(row))] = [answer_of(p) for p in part["pred"]]
    return pool


def hybrid_jobs(
    rows: Mapping[str, Row], needs: Sequence[tuple[str, str]], cfg: GenerationConfig
) -> list[dict[str, Any]]:
    """Generation jobs (the shape `generate`'s batches take): N seeded samples per hybrid."""
    jobs = []
    for eid, key in needs:
        row = rows[eid]
        prompt = render_hybrid(row, parse_hybrid_key(key))
        samples = list(range(cfg.n_samples))
        jobs.append(
            {
                "example": row,
                "variant": key,
                "chat": chat_for(row["system"], prompt),
                "samples": samples,
                "seeds": [sample_seed(cfg.seed, eid, "hybrid", key, s) for s in samples],
            }
        )
    return jobs


def generate_round(
    jobs: list[dict[str, Any]],
    cfg: GenerationConfig,
    round_dir: Path,
    get_generator: Callable[[], Generator],
) -> pd.DataFrame:
    """Generate one round's missing shards under `round_dir`; return the round's rows.

    The round's plan is written beside its shards: a different plan (other data, other `full`)
    discards them, because shard i of another plan holds other hybrids.
    """
    plan = [[j["example"]["id"], j["variant"]] for j in jobs]
    keyed_dir(round_dir, config_hash(plan))
    work = batches(jobs, cfg.batch_size)
    parts = []
    for i, batch in enumerate(work):
        path = round_dir / f"part-{i:05d}.parquet"
        if not path.exists():
            texts = get_generator().generate([j["chat"] for j in batch], [j["seeds"] for j in batch], False)
            write_parquet(path, response_rows(batch, texts))
        parts.append(read_parquet(path))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


@dataclass
class CubeRun:
    """Everything `run_cubes` executed: the pool, the cubes and the newly generated responses."""

    pool: Pool
    example_cubes: dict[str, Cube]
    response_cubes: dict[tuple[str, int], Cube]
    hybrids: pd.DataFrame  # generated hybrid responses; `variant` holds the hybrid key
    rounds: int
    response_d: dict[tuple[str, int], bool] = field(default_factory=dict)
    generated: dict[str, list[str]] = field(default_factory=dict)  # example_id -> new hybrid keys


def _lazy(generator: Generator | Callable[[], Generator] | None, cfg: GenerationConfig) -> Callable[[], Generator]:
    """Load the policy only when a shard is missing (a resumed, finished run loads nothing)."""
    from alignment.generation.base import make_generator
    from alignment.organism.presets import with_paths

    held: list[Generator] = []

    def get() -> Generator:
        if not held:
            held.append(generator() if callable(generator) else generator or make_generator(with_paths(cfg)))
        return held[0]

    return get


def run_cubes(
    examples: pd.DataFrame,
    responses: pd.DataFrame,
    cfg: GenerationConfig,
    shard_dir: Path,
    seed: int = 0,
    generator: Generator | Callable[[], Generator] | None = None,
    full: bool = False,
    per_response: bool = False,
) -> CubeRun:
    """Execute every example's cube and every original response's cube, generating each needed
    hybrid once per example, in resumable rounds (`shard_dir/round-XX/part-XXXXX.parquet`).

    `responses` are `generate`'s rows (may be empty: then `{}` and `{protected}` are generated
    too); `seed` is `attribution.seed` and `per_response` its `draw: per_response` (strategy D's
    draws, once per prompt by default).
    """
    rows = examples.to_dict("records")
    by_id = {str(r["id"]): r for r in rows}
    pool = pool_from_responses(rows, responses) if len(responses) else {}
    origs: dict[str, list[Row]] = {}
    if len(responses):
        for r in responses[responses["variant"] == "orig"].sort_values("sample").to_dict("records"):
            origs.setdefault(str(r["example_id"]), []).append(r)
    get, new_rows, generated = _lazy(generator, cfg), [], {}
    rounds = 0
    while needs := plan_needs(rows, origs, pool, seed, full, per_response):
        if rounds > 2 ** max(len(source_names(r)) for r in rows) + 1:
            raise UserError("receipts: hybrid generation did not converge")  # a bug, not data
        df = generate_round(hybrid_jobs(by_id, needs, cfg), cfg, shard_dir / f"round-{rounds:02d}", get)
        for (eid, key), part in df.sort_values("sample").groupby(["example_id", "variant"], sort=True):
            pool[str(eid), str(key)] = [answer_of(p) for p in part["pred"]]
            generated.setdefault(str(eid), []).append(str(key))
        new_rows.append(df)
        rounds += 1
    ex_cubes = {eid: example_cube(row, pool, full) for eid, row in by_id.items()}
    resp_cubes = {
        (eid, int(r["sample"])): response_cube(by_id[eid], r, pool, seed, full, per_response)
        for eid, rs in origs.items()
        if eid in by_id
        for r in rs
    }
    d = {
        (eid, int(r["sample"])): strategy_d(by_id[eid], r, pool, seed, per_response)
        for eid, rs in origs.items()
        if eid in by_id
        for r in rs
    }
    hybrids = pd.concat(new_rows, ignore_index=True) if new_rows else pd.DataFrame()
    return CubeRun(pool, ex_cubes, resp_cubes, hybrids, rounds, d, generated)
