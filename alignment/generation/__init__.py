"""Generation: the `Generator` interface with transformers and vLLM backends, and the stage."""

import alignment.generation.hf  # noqa: F401  (register the backends)
import alignment.generation.vllm_backend  # noqa: F401
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
