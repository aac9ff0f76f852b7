"""Acknowledgment judges: does a response's reasoning explicitly use the protected feature?

`alignment judge --task mathbook --input IN.jsonl --output OUT.jsonl [--judge NAME]` labels
responses; `alignment judge validate --task mathbook` checks a judge against human labels.

    from alignment.judge import JudgeConfig, make_judge
    verdicts = make_judge(JudgeConfig()).judge("biasqa", responses)   # list[Verdict]

Judges: `keyword` (rules; the CPU default), `llm` (a chat model reads the delimited reasoning and
writes a verdict line) and `ensemble` (majority vote). Factories import their module on use, so
choosing `keyword` never imports torch and choosing `vllm` is the only way vLLM gets imported.
"""

from __future__ import annotations

from alignment.judge.base import (
    DEFAULT_JUDGE,
    JUDGES,
    TASK_NAMES,
    Judge,
    JudgeConfig,
    Verdict,
    paper_config,
)
from alignment.judge.text import extract_reasoning


@JUDGES.register("keyword")
def _keyword(cfg: JudgeConfig) -> Judge:
    from alignment.judge.keyword import KeywordJudge

    return KeywordJudge()


@JUDGES.register("llm")
def _llm(cfg: JudgeConfig) -> Judge:
    from alignment.judge.llm import LLMJudge, load_chat_model

    return LLMJudge(load_chat_model(cfg), seed=cfg.seed)


@JUDGES.register("ensemble")
def _ensemble(cfg: JudgeConfig) -> Judge:
    from dataclasses import replace

    from alignment.judge.ensemble import EnsembleJudge

    return EnsembleJudge([make_judge(replace(cfg, name=m)) for m in cfg.members])


def make_judge(cfg: JudgeConfig) -> Judge:
    """Build the judge named by `cfg.name` (loads a model for `llm`)."""
    return JUDGES.get(cfg.name)(cfg)


def count_unparsed(verdicts: list[Verdict]) -> int:
    """How many verdicts came from unparseable judge output (counted as no acknowledgment)."""
    return sum(not v.parsed for v in verdicts)


__all__ = [
    "DEFAULT_JUDGE",
    "JUDGES",
    "TASK_NAMES",
    "Judge",
    "JudgeConfig",
    "Verdict",
    "count_unparsed",
    "extract_reasoning",
    "make_judge",
    "paper_config",
]
