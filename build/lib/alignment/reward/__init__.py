"""Reward models (classifier and judge backends) and the `score` stage."""

from alignment.reward import classifier, judge_rm  # noqa: F401  (register the backends)
from alignment.reward.base import REWARD_MODELS, RewardConfig, RewardModel, make_reward_model

__all__ = ["REWARD_MODELS", "RewardConfig", "RewardModel", "make_reward_model"]
