"""Acknowledgment judges: does a response's reasoning explicitly use the protected feature?

`alignment judge --task NAME --input IN.jsonl --output OUT.jsonl [--judge NAME]` labels
responses; `alignment judge validate --task NAME` checks a judge against human labels.

    from alignment.judge import JudgeConfig, make_judge
    verdicts = make_judge(JudgeConfig()).judge(task.judge_as, responses)   # list[Verdict]

Judges: `keyword` (rules; the CPU default), `llm` (a chat model reads the delimited reasoning and
writes a verdict line) and `ensemble` (majority vote). Factories import their module on use, so
choosing `keyword` never imports torch and choosing `vllm` is the only way vLLM gets imported.
"""

from __future__ import annotations

from collections.abc import Callable

from alignment.judge.base import (
    DEFAULT_JUDGE,
    JUDGES,
    Judge,
    JudgeConfig,
    Verdict,
    judge_definitions,
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


# What keys a judge's verdicts besides its config section (code and prompt files), per judge
# name, computed without building the judge (an LLM judge would load its model).
CODE_IDS: dict[str, Callable[[JudgeConfig, str], str]] = {}


def _code_of(name: str) -> Callable[[Callable[[JudgeConfig, str], str]], Callable[[JudgeConfig, str], str]]:
    def deco(fn: Callable[[JudgeConfig, str], str]) -> Callable[[JudgeConfig, str], str]:
        CODE_IDS[name] = fn
        return fn

    return deco


@_code_of("keyword")
def _keyword_code(cfg: JudgeConfig, task: str) -> str:
    from alignment.judge.keyword import KeywordJudge

    return KeywordJudge.code_id(task)


@_code_of("llm")
def _llm_code(cfg: JudgeConfig, task: str) -> str:
    from alignment.judge.llm import LLMJudge

    return LLMJudge.code_id(task)


@_code_of("ensemble")
def _ensemble_code(cfg: JudgeConfig, task: str) -> str:
    from dataclasses import replace
    from pathlib import Path

    from alignment.cache import file_hash
    from alignment.config import config_hash

    members = {m: code_id(replace(cfg, name=m), task) for m in cfg.members}
    return config_hash({"vote": file_hash(Path(__file__).resolve().parent / "ensemble.py"), "members": members})


def code_id(cfg: JudgeConfig, task: str | None) -> str:
    """The cache key of the judge `cfg` chooses for responses judged as `task` (a judge
    definition), beyond its config section: the keyword judge's rules for that task, the LLM
    judge's code and prompt, an ensemble's members'. "" for a task without a judge definition
    or a judge registered without a code id (its config section is all that keys it).

    >>> code_id(JudgeConfig(), None)
    ''
    """
    if task is None or cfg.name not in CODE_IDS:
        return ""
    return CODE_IDS[cfg.name](cfg, task)


def make_judge(cfg: JudgeConfig) -> Judge:
    """Build the judge named by `cfg.name` (loads a model for `llm`)."""
    return JUDGES.get(cfg.name)(cfg)


def count_unparsed(verdicts: list[Verdict]) -> int:
    """How many verdicts came from unparseable judge output (counted as no acknowledgment)."""
    return sum(not v.parsed for v in verdicts)


__all__ = [
    "DEFAULT_JUDGE",
    "JUDGES",
    "Judge",
    "JudgeConfig",
    "Verdict",
    "code_id",
    "count_unparsed",
    "extract_reasoning",
    "judge_definitions",
    "make_judge",
    "paper_config",
]
