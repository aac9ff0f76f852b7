"""`python -m alignment.measure.cluster.projection [--json] [--run DIR] [--out FILE]`: the paper grid's wall
time on 1, 8 and 32 GPUs, projected on paper. A projection, not a measurement: no GPU ran here.

The grid is every `configs/paper_*.yaml` run config (policy x task), its sizes read from the
configs and counted in the public datasets; each config runs `generate`, then `score` once per
reward model, then `ack` with the paper's judge (`alignment.judge.paper_config`). The model:

- a sharded stage on k workers takes load + ceil(shards / k) x per-shard seconds (`stage_wall_s`):
  shards independent and of equal size, one model replica per worker loaded once (all workers in
  parallel), the driver's writes negligible (`--run DIR` shows how small they are on a real run);
- a stage whose replica needs g GPUs gets k // g workers and does not fit when g > k;
- the stages of a config run in sequence; configs run one after another, each stage on all k GPUs
  (with more shards than workers, running configs side by side changes only the load and tail);
- `ack` runs as the code runs it (docs/cluster.md): shards of
  `alignment.stages.ack.shard_size(judge.batch_size)` responses, one judge replica per worker, so
  the TP=4 paper judge (`executor.stages.ack.num_gpus: 4`) has k // 4 workers;
- time = tokens / tokens-per-second; decode rates are the batch-16 rates measured on an H200 at
  Llama-3.1-8B shape, scaled to other models by parameters per GPU (bandwidth-bound decoding);
  prefill (scoring, the judge reading) runs at `peak_tflops x mfu` over 2 x parameters FLOPs/token.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from alignment.config import check
from alignment.errors import UserError, did_you_mean

ROOT = Path(__file__).resolve().parents[1]
# Published parameter counts (model cards), in billions; a Skywork RM is its base model less the LM head.
PARAMS_B = {
    "llama-3.1-8b-instruct": 8.03,
    "llama-3.2-3b-instruct": 3.21,
    "llama-3.3-70b-instruct": 70.6,
    "skywork-reward-llama-3.1-8b-v0.2": 7.5,
    "skywork-reward-gemma-2-27b-v0.2": 27.2,
}
ISSUE41 = "measured on an H200 by an earlier session (issue 41), not by this projection"


def params_b(model: str) -> float:
    """Billions of parameters of a model this projection knows.

    >>> params_b("llama-3.2-3b-instruct")
    3.21
    >>> params_b("llama-3.2-3b")
    Traceback (most recent call last):
    alignment.errors.UserError: model 'llama-3.2-3b': no parameter count known (did you mean 'llama-3.2-3b-instruct'?)
    """
    if model not in PARAMS_B:
        raise UserError(f"model {model!r}: no parameter count known{did_you_mean(model, PARAMS_B)}")
    return PARAMS_B[model]


@dataclass
class Inputs:
    """Every throughput and length the projection needs; each but `ref_params_b` is a flag (`--help` says
    which is measured and which assumed)."""

    decode_tok_s: list[float] = field(default_factory=lambda: [94.0, 749.0, 4000.0])  # scenarios measured on an H200
    detail_tok_s: float = 749.0  # the scenario broken down stage by stage
    ref_params_b: float = 8.03  # the shape the decode rates were measured at (Llama-3.1-8B)
    score_speedup: float = 0.0  # 0: count the shared prefix's tokens; else divide naive tokens by it
    peak_tflops: float = 790.0  # bf16 matmul rate the weight-read floor used
    mfu: float = 0.4  # assumption: share of that peak a scoring / judge prefill reaches
    response_tokens: float = 400.0  # assumption: mean response length
    chars_per_token: float = 4.0  # assumption: prompt characters per token
    judge_out_tokens: float = 256.0  # judge.max_new_tokens of the paper judge: an upper bound
    reward_models: list[str] = field(default_factory=lambda: ["skywork-reward-llama-3.1-8b-v0.2",
                                                              "skywork-reward-gemma-2-27b-v0.2"])
    load_fixed_s: float = 60.0  # assumption: engine start-up per model load
    load_gb_s: float = 2.0  # assumption: weight read rate from disk, GB/s per GPU
    aqua_rows: dict[str, int] = field(default_factory=lambda: {"train": 97467})  # dataset card figure
    gpus: list[int] = field(default_factory=lambda: [1, 8, 32])

    def __post_init__(self) -> None:
        for name in ("detail_tok_s", "ref_params_b", "peak_tflops", "response_tokens",
                     "chars_per_token", "judge_out_tokens", "load_gb_s"):
            check(getattr(self, name) > 0, name, f"must be > 0, got {getattr(self, name)}")
        check(0 < self.mfu <= 1, "mfu", f"must be in (0, 1], got {self.mfu}")
        check(self.score_speedup == 0 or self.score_speedup >= 1, "score_speedup", f"must be 0 or >= 1, got {self.score_speedup}")
        check(self.load_fixed_s >= 0, "load_fixed_s", f"must be >= 0, got {self.load_fixed_s}")
        check(bool(self.decode_tok_s) and min(self.decode_tok_s) > 0, "decode_tok_s", "must list rates > 0")
        check(bool(self.gpus) and min(self.gpus) >= 1, "gpus", "must list GPU counts >= 1")
        check(all(n >= 0 for n in self.aqua_rows.values()), "aqua_rows", "row counts must be >= 0")
        for m in self.reward_models:
            params_b(m)


def stage_wall_s(shards: int, per_shard_s: float, load_s: float, workers: int) -> float:
    """Wall seconds of a sharded stage: each worker loads once, then the shards go in rounds of `workers`.

    >>> stage_wall_s(10, 2.0, 30.0, 4)  # 30 s load + ceil(10 / 4) = 3 rounds of 2 s
    36.0
    >>> stage_wall_s(10, 2.0, 30.0, 1), stage_wall_s(10, 2.0, 30.0, 32)
    (50.0, 32.0)
    >>> stage_wall_s(0, 2.0, 30.0, 4)  # nothing to do: no worker starts
    0.0
    """
    check(workers >= 1, "workers", f"must be >= 1, got {workers}")
    return 0.0 if shards == 0 else load_s + math.ceil(shards / workers) * per_shard_s


def decode_rate(ref_tok_s: float, ref_params_b: float, params: float, tp: int = 1) -> float:
    """Decode tokens/s of a model, scaled from a reference rate by the weights each GPU reads per step.

    >>> round(decode_rate(749.0, 8.03, 3.21))  # a 3B policy reads 2.5x fewer weights per step
    1874
    >>> round(decode_rate(749.0, 8.03, 70.6, tp=4))  # 70B over 4 GPUs: 17.65B per GPU
    341
    """
    return ref_tok_s * ref_params_b / (params / tp)


def prefill_rate(peak_tflops: float, mfu: float, params: float, tp: int = 1) -> float:
    """Prefill tokens/s at a share of peak matmul rate, 2 x parameters FLOPs per token.

    >>> round(prefill_rate(790.0, 0.4, 7.5))
    21067
    """
    return peak_tflops * 1e12 * mfu * tp / (2 * params * 1e9)


def load_seconds(params: float, tp: int, fixed_s: float, gb_s: float) -> float:
    """One model load: start-up plus each GPU reading its bf16 share of the weights (in parallel).

    >>> load_seconds(8.0, 1, 60.0, 2.0)
    68.0
    """
    return fixed_s + 2 * params / tp / gb_s


def generate_shards(prompts: int, n_samples: int, greedy: bool, batch_size: int) -> tuple[int, int]:
    """(shards, sequences) of `generate`, cut as `alignment.generation.sampling.batches` cuts them.

    >>> generate_shards(4, 16, True, 16), generate_shards(4, 3, True, 16)  # a greedy row joins its prompt's samples
    ((4, 68), (1, 16))
    """
    from alignment.generation.sampling import batches

    jobs = [{"samples": list(range(n_samples)) + ([-1] if greedy else [])}] * prompts
    return len(batches(jobs, batch_size)), sum(len(j["samples"]) for j in jobs)


@dataclass(frozen=True)
class Stage:
    """One stage of one config: its shards, seconds per shard, load and GPUs per model replica."""

    config: str
    name: str
    shards: int
    per_shard_s: float
    load_s: float
    gpus_per_replica: int

    def wall_s(self, gpus: int) -> float | None:
        """Seconds on `gpus` GPUs; None when one replica does not fit."""
        workers = gpus // self.gpus_per_replica
        if workers == 0:
            return None
        return stage_wall_s(self.shards, self.per_shard_s, self.load_s, workers)

    def as_one_call(self) -> Stage:
        """The same work as one shard on one replica: `ack` as it ran before it was sharded, one judge call in the driver.

        >>> Stage("c", "ack", 7, 10.0, 60.0, 4).as_one_call().wall_s(32)  # 60 s load + 70 s of calls
        130.0
        """
        return replace(self, shards=min(self.shards, 1), per_shard_s=self.shards * self.per_shard_s)


def scoring_tokens(prompt: float, response: float, per_prompt: int, speedup: float = 0.0) -> float:
    """Tokens a reward model reads for one example. Shared prefix (`speedup` 0): each prompt once
    per variant, then every scored sequence's response (originals twice: plain and with the
    acknowledgment). With a measured `speedup`: the naive count (prompt + response per sequence)
    divided by it.

    >>> scoring_tokens(500.0, 400.0, 17)  # 2 prompts + 51 responses
    21400.0
    >>> round(scoring_tokens(500.0, 400.0, 17, speedup=7.7))  # 51 x 900 / 7.7
    5961
    """
    scored = 3 * per_prompt
    return scored * (prompt + response) / speedup if speedup else 2 * prompt + scored * response


def config_stages(grid: Any, inp: Inputs, tok_s: float) -> list[Stage]:
    """generate, score (once per reward model) and ack of one config at reference decode rate `tok_s`."""
    from alignment.judge.base import paper_config

    policy = params_b(grid.policy)
    shards, seqs = generate_shards(grid.prompts, grid.n_samples, grid.greedy, grid.batch_size)
    gen_s = seqs * inp.response_tokens / decode_rate(tok_s, inp.ref_params_b, policy)
    stages = [Stage(grid.name, "generate", shards, gen_s / max(shards, 1),
                    load_seconds(policy, 1, inp.load_fixed_s, inp.load_gb_s), 1)]
    prompt_tokens = grid.prompt_chars / inp.chars_per_token
    for rm in inp.reward_models:  # one shard per example: every scored sequence of its responses
        tokens = scoring_tokens(prompt_tokens, inp.response_tokens, grid.per_prompt, inp.score_speedup)
        stages.append(Stage(grid.name, f"score {rm}", grid.examples, tokens / prefill_rate(inp.peak_tflops, inp.mfu, params_b(rm)),
                            load_seconds(params_b(rm), 1, inp.load_fixed_s, inp.load_gb_s), 1))
    judge = paper_config()
    tp, jp = judge.tensor_parallel_size, params_b(judge.model)
    read = (grid.rubric_chars / inp.chars_per_token + inp.response_tokens) / prefill_rate(inp.peak_tflops, inp.mfu, jp, tp)
    per_call = read + inp.judge_out_tokens / decode_rate(tok_s, inp.ref_params_b, jp, tp)
    n = ack_shards(grid.responses, judge.batch_size)
    stages.append(Stage(grid.name, "ack", n, per_call * grid.responses / max(n, 1),  # equal shards, same total work
                        load_seconds(jp, tp, inp.load_fixed_s, inp.load_gb_s), tp))
    return stages


def ack_shards(responses: int, judge_batch: int) -> int:
    """Shards `ack` cuts `responses` into, by the stage's own `shard_size` (the last may be shorter).

    >>> from alignment.stages.ack import shard_size
    >>> ack_shards(4080, 8) == math.ceil(4080 / shard_size(8)), ack_shards(0, 8)
    (True, 0)
    """
    from alignment.stages import ack

    return ack.shard_count(responses, judge_batch)


def grid_wall_s(stages: Sequence[Stage], gpus: int) -> float | None:
    """Stages in sequence: the sum of their wall times; None if any does not fit.

    >>> s = [Stage("c", "generate", 10, 2.0, 30.0, 1), Stage("c", "ack", 10, 8.0, 60.0, 4)]
    >>> grid_wall_s(s, 8), grid_wall_s(s, 2)  # (30 + 2 rounds x 2) + (60 + 5 rounds x 8 on 2 judges)
    (134.0, None)
    """
    walls = [s.wall_s(gpus) for s in stages]
    return None if any(w is None for w in walls) else sum(w for w in walls if w is not None)


def project(grids: Sequence[Any], inp: Inputs) -> dict[str, Any]:
    """Hours for each decode scenario and GPU count (ack as the code runs it, as one call on one
    judge as before ack was sharded, and left out), and the stage-by-stage detail of `inp.detail_tok_s`."""
    def hours(stages: list[Stage], k: int) -> float | None:
        w = grid_wall_s(stages, k)
        return None if w is None else w / 3600

    rows = []
    for tok_s in inp.decode_tok_s:
        stages = [s for g in grids for s in config_stages(g, inp, tok_s)]
        one_judge = [s.as_one_call() if s.name == "ack" else s for s in stages]
        no_ack = [s for s in stages if s.name != "ack"]
        rows.append({"decode_tok_s": tok_s, "hours": {k: hours(stages, k) for k in inp.gpus},
                     "hours_one_judge": {k: hours(one_judge, k) for k in inp.gpus},
                     "hours_without_ack": {k: hours(no_ack, k) for k in inp.gpus}})
    detail = [asdict(s) | {"hours": {k: (None if (w := s.wall_s(k)) is None else w / 3600) for k in inp.gpus}}
              for g in grids for s in config_stages(g, inp, inp.detail_tok_s)]
    return {"scenarios": rows, "detail": detail}


def parse_rows(items: Sequence[str]) -> dict[str, int]:
    """`SPLIT=N` flags into a dict.

    >>> parse_rows(["train=97467", "dev=254"])
    {'train': 97467, 'dev': 254}
    >>> parse_rows(["train"])
    Traceback (most recent call last):
    alignment.errors.UserError: --aqua-rows: expected SPLIT=N, got 'train'
    """
    out = {}
    for item in items:
        name, _, n = item.partition("=")
        if not name or not n.strip().isdigit():
            raise UserError(f"--aqua-rows: expected SPLIT=N, got {item!r}")
        out[name] = int(n)
    return out


def command(argv: Sequence[str] | None) -> str:
    """The command line that produced a projection, for its report.

    >>> command(["--gpus", "1", "8"])
    'python -m alignment.measure.cluster.projection --gpus 1 8'
    """
    return " ".join(["python -m alignment.measure.cluster.projection", *map(shlex.quote, sys.argv[1:] if argv is None else argv)])


def arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m alignment.measure.cluster.projection", description=__doc__.split("\n")[0])
    d = Inputs()
    p.add_argument("--json", action="store_true", help="print the projection as JSON")
    p.add_argument("--out", type=Path, help="also write the markdown (or JSON) here, atomically")
    p.add_argument("--run", type=Path, help="a finished run dir: print its measured per-shard times")
    p.add_argument("--configs", type=Path, default=ROOT / "configs", help="folder of paper_*.yaml run configs")
    p.add_argument("--aqua-dir", type=Path, default=ROOT.parent / "shared/data/aqua_rat", help="AQuA-RAT {split}.json files")
    p.add_argument("--winogender-dir", type=Path, default=ROOT.parent / "shared/data/winogender", help="Winogender tsv files")
    p.add_argument("--aqua-rows", nargs="*", default=[f"{k}={v}" for k, v in d.aqua_rows.items()],
                   help="SPLIT=N for AQuA-RAT splits with no local file (default: the hub train split's 97,467 rows, "
                        "from the deepmind/aqua_rat dataset card; not counted here)")
    p.add_argument("--decode-tok-s", type=float, nargs="+", default=d.decode_tok_s,
                   help=f"Llama-3.1-8B decode tokens/s at batch 16, one scenario each; defaults {ISSUE41}: the "
                        "project's decoder 94, transformers static+compile 749, the weight-read floor ~4,000")
    p.add_argument("--detail-tok-s", type=float, default=d.detail_tok_s, help="scenario shown stage by stage")
    p.add_argument("--score-speedup", type=float, default=d.score_speedup,
                   help=f"0 (default): count the tokens scoring with a shared prefix reads; X: naive tokens / X "
                        f"(7.7 was {ISSUE41}, at that bench's shape)")
    p.add_argument("--peak-tflops", type=float, default=d.peak_tflops, help="bf16 matmul TFLOP/s (the weight-read floor's)")
    p.add_argument("--mfu", type=float, default=d.mfu, help="assumption: share of peak a prefill reaches")
    p.add_argument("--response-tokens", type=float, default=d.response_tokens, help="assumption: mean response tokens")
    p.add_argument("--chars-per-token", type=float, default=d.chars_per_token, help="assumption: prompt chars per token")
    p.add_argument("--judge-out-tokens", type=float, default=d.judge_out_tokens, help="judge tokens per call (cap 256)")
    p.add_argument("--reward-models", nargs="+", default=d.reward_models, help="assumption: the paper's two Skywork RMs")
    p.add_argument("--load-fixed-s", type=float, default=d.load_fixed_s, help="assumption: start-up seconds per load")
    p.add_argument("--load-gb-s", type=float, default=d.load_gb_s, help="assumption: weight read GB/s per GPU")
    p.add_argument("--gpus", type=int, nargs="+", default=d.gpus, help="GPU counts")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from alignment.measure.cluster.report import markdown, run_label, shard_timings
    from alignment.measure.cluster.sizes import paper_grid
    from alignment.store import write_text

    a = arguments(argv)
    try:
        inp = Inputs(a.decode_tok_s, a.detail_tok_s, 8.03, a.score_speedup, a.peak_tflops, a.mfu, a.response_tokens,
                     a.chars_per_token, a.judge_out_tokens, a.reward_models, a.load_fixed_s, a.load_gb_s,
                     parse_rows(a.aqua_rows), a.gpus)
        grids = paper_grid(a.configs, a.aqua_dir, a.winogender_dir, inp.aqua_rows)
        result = {"inputs": asdict(inp), "grid": [g.summary() for g in grids], **project(grids, inp),
                  "measured": shard_timings(a.run) if a.run else None,
                  "run": run_label(a.run) if a.run else None, "command": command(argv)}
    except UserError as e:
        print(f"cluster.projection: error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=1) + "\n" if a.json else markdown(result, grids, inp)
    if a.out:
        write_text(a.out, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
