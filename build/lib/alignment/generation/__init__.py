"""Generation: the `Generator` interface with transformers and vLLM backends, and the stage."""

from alignment.generation import hf, vllm_backend  # noqa: F401  (register the backends)
from alignment.generation.base import (
    GENERATORS,
    Chat,
    GenerationConfig,
    Generator,
    chat_for,
    make_generator,
    sample_seed,
)

__all__ = [
    "GENERATORS",
    "Chat",
    "GenerationConfig",
    "Generator",
    "chat_for",
    "make_generator",
    "sample_seed",
]
