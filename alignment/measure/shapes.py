"""Named model shapes with random weights, a word-level tokenizer and the device's own floors,
for `alignment bench --device DEV --shape NAME` (alignment/measure/device.py). Nothing downloads.

A shape is a transformers config written here (the published sizes of the paper's models);
its models are built in memory with seeded random weights, which time exactly like trained
ones. The tokenizer is a word-level one built from the bench's own prompt wording, so prompts
and responses have realistic lengths (about one token per word) without any hub file.

The floors are measured on the device, not looked up: memory bandwidth from a large copy and
the matmul peak from a large square matmul in the bench dtype (bf16 on CUDA).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import torch

from alignment.registry import Registry

SHAPES: Registry = Registry("bench shape")


@dataclass(frozen=True)
class Shape:
    """One model shape: a Llama or Qwen3 config's sizes."""

    name: str
    family: str  # "llama" or "qwen3"
    sizes: dict[str, Any] = field(default_factory=dict)  # config keyword arguments

    def config(self, vocab: int | None = None, **kw: Any) -> Any:
        from transformers import LlamaConfig, Qwen3Config

        cls = LlamaConfig if self.family == "llama" else Qwen3Config
        sizes = {**self.sizes, **({"vocab_size": vocab} if vocab else {})}
        return cls(**sizes, pad_token_id=0, bos_token_id=None, eos_token_id=None, **kw)


_LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
for _shape in (
    Shape("llama-3.1-8b", "llama", dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                        num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                                        rms_norm_eps=1e-5, rope_parameters={**_LLAMA3_ROPE, "factor": 8.0})),
    Shape("llama-3.2-3b", "llama", dict(vocab_size=128256, hidden_size=3072, intermediate_size=8192, num_hidden_layers=28,
                                        num_attention_heads=24, num_key_value_heads=8, head_dim=128, rms_norm_eps=1e-5,
                                        max_position_embeddings=131072, rope_parameters=_LLAMA3_ROPE, tie_word_embeddings=True)),
    Shape("qwen3-1.7b", "qwen3", dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                                      num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                                      rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True)),
    # For tests and CI: runs the same code on a CPU in seconds.
    Shape("tiny", "llama", dict(vocab_size=1024, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)),
):
    SHAPES.register(_shape.name)(_shape)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL = ["<pad>", "<unk>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]


def word_tokenizer(texts: list[str]) -> Any:
    """A word-level fast tokenizer whose vocabulary is the words of `texts` (others are <unk>)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    split = pre_tokenizers.Whitespace()
    words = sorted({w for t in texts for w, _ in split.pre_tokenize_str(t)} - set(SPECIAL))
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(SPECIAL + words)}, unk_token="<unk>"))
    tok.pre_tokenizer = split
    tok.decoder = decoders.WordPiece()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", unk_token="<unk>", eos_token="<|end|>",
                                   additional_special_tokens=SPECIAL[3:])
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def build(shape: Shape, kind: str, device: str, dtype: torch.dtype, seed: int = 0) -> Any:
    """A random-weight model of `shape` on `device`: kind "causal" or "classifier" (one logit)."""
    from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

    torch.manual_seed(seed)
    cls = AutoModelForCausalLM if kind == "causal" else AutoModelForSequenceClassification
    extra = {"num_labels": 1} if kind == "classifier" else {}
    with torch.device(device):  # initialise in place: an 8B model is never built on the host
        model = cls.from_config(shape.config(**extra), dtype=dtype)
    return model.eval()


def params(model: Any, embeddings: bool = False) -> int:
    """Parameter count of `model`; without `embeddings`, less the input embedding table (a
    lookup: neither matmul FLOPs nor read whole each step) unless it is also the output head.

    Counts the matmul work per token (FLOPs ~ 2 x this) and the bytes a decode step reads.
    """
    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings()
    total = sum(p.numel() for p in model.parameters())  # a tied table is counted once
    return total if embeddings or (head is not None and head.weight is emb) else total - emb.numel()


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _best_of(fn: Any, device: str, repeats: int = 5) -> float:
    fn()
    sync(device)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def device_floors(device: str, dtype: torch.dtype) -> dict[str, float]:
    """Measured memory bandwidth (bytes/s: a copy reads and writes its size) and matmul peak
    (FLOP/s of a square matmul in `dtype`) of `device`; small sizes on a CPU."""
    big = device.startswith("cuda")
    x = torch.empty((1 << 30) if big else (1 << 24), dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    bandwidth = 2 * x.numel() / _best_of(lambda: y.copy_(x), device)
    n = 8192 if big else 512
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    peak = 2 * n**3 / _best_of(lambda: a @ b, device)
    return {"bandwidth_bytes_per_s": bandwidth, "matmul_flops_per_s": peak, "matmul_n": float(n)}
