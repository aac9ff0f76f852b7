"""The judge interface: `Verdict`, the `Judge` protocol and `JudgeConfig`.

`alignment judge --task mathbook --input IN.jsonl --output OUT.jsonl --judge keyword` builds a
judge from a `JudgeConfig` (see `alignment.judge.make_judge`) and calls `judge(task, responses)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from alignment.config import check, check_device, doc
from alignment.errors import UserError
from alignment.generation.base import GENERATORS
from alignment.registry import Registry

TASK_NAMES = ("mathbook", "biasqa", "hints")
DEFAULT_JUDGE = "keyword"
# Paper setup: Llama-3.3-70B-Instruct, greedy, 256 new tokens, on vLLM across 4 GPUs.
PAPER_MODEL = "llama-3.3-70b-instruct"
# Declared here, filled by `alignment.judge` (each factory imports its module on use), so that
# configs can check names without importing the judges.
JUDGES: Registry = Registry("judge")


@dataclass(frozen=True)
class Verdict:
    """One judgment. `parsed` is False only when an LLM judge's output had no verdict line; such
    a verdict is `ack=False` and callers count it (`alignment judge` prints the count)."""

    ack: bool
    raw: str
    parsed: bool = True


@runtime_checkable
class Judge(Protocol):
    """Decides, per response, whether its reasoning explicitly uses the protected feature."""

    name: str

    def judge(self, task: str, responses: list[str]) -> list[Verdict]: ...


@dataclass
class JudgeConfig:
    """Which acknowledgment judge to use and, for an LLM judge, which model and how to decode."""

    name: str = doc(
        "Judge: keyword (rules, CPU default), llm (a chat model reads the reasoning) or "
        "ensemble (majority vote of `members`).",
        DEFAULT_JUDGE,
    )
    model: str = doc(
        "llm judge: preset (smollm2-135m, llama-3.3-70b-instruct, ...), hub id or local folder.",
        "smollm2-135m",
    )
    backend: str = doc(
        "llm judge: transformers (CPU/GPU) or vllm (GPU only, optional extra).", "transformers"
    )
    max_new_tokens: int = doc("llm judge: tokens the judge may write (paper: 256).", 256)
    batch_size: int = doc("llm judge: prompts per forward pass (transformers backend).", 8)
    seed: int = doc("llm judge: decoding seed and the seed of the prompt delimiters.", 0)
    device: str = doc("llm judge: auto, cpu, cuda or cuda:N (transformers backend).", "auto")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = doc(
        "llm judge: weights dtype; auto = bf16 on GPU, fp32 on CPU.", "auto"
    )
    tensor_parallel_size: int = doc("llm judge on vllm: GPUs per model replica (paper: 4).", 1)
    members: list[str] = doc(
        "ensemble: judge names that vote (not 'ensemble'); ties count as no acknowledgment.",
        factory=lambda: ["keyword", "llm"],
    )

    def __post_init__(self) -> None:
        _known("name", self.name)
        GENERATORS.check(self.backend, "backend")
        check(self.max_new_tokens >= 1, "max_new_tokens", f"must be >= 1, got {self.max_new_tokens}")
        check(self.batch_size >= 1, "batch_size", f"must be >= 1, got {self.batch_size}")
        check(self.tensor_parallel_size >= 1, "tensor_parallel_size", "must be >= 1")
        check(bool(self.model.strip()), "model", "must name a model")
        check_device(self.device)
        if self.name == "ensemble":
            check(len(self.members) >= 2, "members", "an ensemble needs at least two judges")
            check("ensemble" not in self.members, "members", "an ensemble cannot contain 'ensemble'")
            for m in self.members:
                _known("members", m)


def _known(field_name: str, judge: str) -> None:
    """Unknown judge names fail as `<field>: unknown judge 'x' (did you mean ...)`."""
    try:
        JUDGES.get(judge)
    except UserError as e:
        raise UserError(f"{field_name}: {e}") from None


def paper_config() -> JudgeConfig:
    """The published evaluation LLM: Llama-3.3-70B-Instruct, greedy, 256 tokens, vLLM (TP=4)."""
    return JudgeConfig(
        name="llm", model=PAPER_MODEL, backend="vllm", max_new_tokens=256, tensor_parallel_size=4
    )


def check_task(task: str) -> None:
    check(task in TASK_NAMES, "task", f"must be one of {', '.join(TASK_NAMES)}, got {task!r}")
