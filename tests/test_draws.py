"""Draws on the model's device and the static-cache decoder, on a CPU.

The pinned ids below were computed with the code before the draw moved to the device (the
logits were copied to the host and every row drew there with a CPU generator): CPU rows must
stay exactly those. The static decoder (CUDA's default) runs here uncompiled, or compiled with
the "eager" backend (dynamo traces the whole step, no code generation), and must give the
tokens of the other decoders. The CUDA tests run only where a GPU is (jobs/gpu_check.sh).
"""

from __future__ import annotations

import pytest
import torch

from alignment.generation.base import GenerationConfig, chat_for
from alignment.generation.draws import Picker, top_p_sample
from alignment.generation.hf import TransformersGenerator

CHATS = [
    chat_for("You are a careful math tutor.", "Problem 1: x = 12 + 3. Options: (A) 12 (B) 15 (C) 18"),
    chat_for("Be brief.", "The nurse told the patient that she would be back."),
]
SEEDS = [[11, 12, 13], [21, 22]]
# New token ids of the five rows above (max_new_tokens 8, fp32 tiny Llama), as the decoder drew them before draws moved to the device.
PINNED = {
    False: [[521, 393, 93, 420, 579, 417, 99, 40], [531, 140, 140, 134, 377, 512, 245, 597],
            [237, 362, 10, 139, 83, 416, 428, 177], [119, 226, 114, 212, 276, 579, 446, 426],
            [208, 435, 154, 202, 514, 189, 226, 593]],
    True: [[159, 455, 242, 443, 441, 61, 310, 492]] * 3 + [[159, 455, 242, 237, 420, 476, 326, 392]] * 2,
}
DECODERS = {"shared-prefix": {}, "batched": {"shared_prefix": False}, "static": {"static": True}}
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _logits(device: str = "cpu") -> torch.Tensor:
    return (torch.randn(4, 600, generator=torch.Generator().manual_seed(5)) * 3).to(device)


def test_cpu_draws_are_pinned() -> None:
    gens = [torch.Generator().manual_seed(s) for s in (1, 2, 3, 2**62 + 7)]
    assert top_p_sample(_logits(), 0.8, 0.95, gens).tolist() == [229, 543, 474, 490]
    gens = [torch.Generator().manual_seed(9) for _ in range(4)]
    assert top_p_sample(_logits(), 1.3, 0.5, gens).tolist() == [544, 383, 579, 490]


def test_picker_row_depends_only_on_its_seed_and_logits() -> None:
    logits = _logits()
    all_rows = Picker([1, 2, 3, 4], "cpu", False, 0.8, 0.95)(logits, [0, 1, 2, 3])
    assert all_rows.device.type == "cpu" and all_rows.dtype == torch.long
    # Row 2 alone, as the only row left in the batch, draws what it drew among the others.
    alone = Picker([1, 2, 3, 4], "cpu", False, 0.8, 0.95)(logits[2:3], [2])
    assert alone.tolist() == all_rows[2:3].tolist()
    assert Picker([1, 2, 3, 4], "cpu", True, 0.8, 0.95)(logits, [0, 1, 2, 3]).tolist() == logits.argmax(-1).tolist()
    assert Picker([1], "cpu", False, 0.0, 0.95).greedy  # temperature 0 is greedy
    # A seed of None is a greedy row: its argmax, while the other rows draw what they drew before.
    mixed = Picker([1, None, 3, None], "cpu", False, 0.8, 0.95)(logits, [0, 1, 2, 3])
    assert mixed[[0, 2]].tolist() == all_rows[[0, 2]].tolist()
    assert mixed[[1, 3]].tolist() == logits[[1, 3]].argmax(-1).tolist()
    assert mixed[[1, 3]].tolist() != all_rows[[1, 3]].tolist()  # else the rows prove nothing


def _gen(model_dir, **kw) -> TransformersGenerator:
    cfg = GenerationConfig(model=str(model_dir), dtype="float32", device="cpu", max_new_tokens=8, batch_size=8)
    return TransformersGenerator(cfg, **kw)


def _ids(g: TransformersGenerator, chats: list = CHATS) -> list[list[int]]:
    return [g.tokenizer(g.render(c), add_special_tokens=False).input_ids for c in chats]


@pytest.mark.parametrize("greedy", [False, True], ids=["sampled", "greedy"])
@pytest.mark.parametrize("decoder", list(DECODERS))
def test_cpu_tokens_are_pinned(tiny_llama_dir, decoder: str, greedy: bool) -> None:
    g = _gen(tiny_llama_dir, **DECODERS[decoder])
    assert g.decoder() == decoder
    rows = g.decode_ids(_ids(g), [0, 0, 0, 1, 1], [s for ss in SEEDS for s in ss], greedy)
    assert rows == PINNED[greedy]
    texts = g.generate(CHATS, SEEDS, greedy=greedy)
    assert [t for o in texts for t in o] == [g.tokenizer.decode(r, skip_special_tokens=True).strip() for r in rows]


def test_cpu_never_takes_the_static_decoder_unless_asked(tiny_llama_dir, monkeypatch) -> None:
    g = _gen(tiny_llama_dir)
    assert g.decoder() == "shared-prefix" and "compile_s" not in g.runtime
    # The same model seen on a CUDA device takes it by default.
    monkeypatch.setattr(type(g.model), "device", property(lambda self: torch.device("cuda")))
    assert g.decoder() == "static"
    assert _gen(tiny_llama_dir, model=g.model, tokenizer=g.tokenizer, static=False).decoder() == "shared-prefix"


def test_static_compiled_once_gives_the_same_tokens(tiny_llama_dir) -> None:
    """Compiled (eager backend, whole graph): same tokens, one compile for batches of other
    prompts and row counts, a second only when a prompt needs a longer cache."""
    from transformers import CompileConfig

    g = _gen(tiny_llama_dir, static=True)
    g.compile_config = CompileConfig(backend="eager", fullgraph=True, dynamic=False, mode=None)
    ref = _gen(tiny_llama_dir, model=g.model, tokenizer=g.tokenizer, shared_prefix=False)
    assert g.generate(CHATS, SEEDS) == ref.generate(CHATS, SEEDS)
    assert g.generate(CHATS[1:], [[5]], greedy=True) == ref.generate(CHATS[1:], [[5]], greedy=True)
    assert g._static.compiles == 1 and float(g.runtime["compile_s"]) >= 0
    long = [chat_for("Tutor.", "Think step by step. " * 60)]
    assert g.generate(long, [[1, 2]]) == ref.generate(long, [[1, 2]])
    assert g._static.compiles == 2 and g._static.length == 512


def test_static_equals_batched_with_early_stops(tiny_llama_dir) -> None:
    """Rows that stop early stay in the static batch (fed on, then dropped from the output)."""
    g = _gen(tiny_llama_dir, static=True)
    ref = _gen(tiny_llama_dir, model=g.model, tokenizer=g.tokenizer, shared_prefix=False)
    g.cfg.max_new_tokens = ref.cfg.max_new_tokens = 16
    free = ref.generate(CHATS, SEEDS)
    ids = [g.tokenizer(t, add_special_tokens=False).input_ids for o in free for t in o]
    stops = {r[len(r) // 2] for r in ids if len(r) > 4}
    for x in (g, ref):
        x.stop = x.stop | stops
    rows = g.decode_ids(_ids(g), [0, 0, 0, 1, 1], [s for ss in SEEDS for s in ss], False)
    assert len({len(r) for r in rows}) > 1 and any(r[-1] in stops for r in rows)
    assert g.generate(CHATS, SEEDS) == ref.generate(CHATS, SEEDS)


def test_static_compile_failure_falls_back_to_the_plain_forward(tiny_llama_dir, capsys) -> None:
    from transformers import CompileConfig

    g = _gen(tiny_llama_dir, static=True)
    g.compile_config = CompileConfig(backend="no-such-backend", mode=None)
    ref = _gen(tiny_llama_dir, model=g.model, tokenizer=g.tokenizer)
    assert g.generate(CHATS, SEEDS, greedy=True) == ref.generate(CHATS, SEEDS, greedy=True)
    assert "torch.compile failed" in capsys.readouterr().err and g._static.compile_config is None
    assert g._static.compiles == 0 and g.runtime["compile_s"] == "0.0"


@cuda
def test_cuda_draws_stay_on_the_device_and_follow_the_seed() -> None:
    logits = _logits("cuda")
    a = Picker([1, 2, 3, 4], "cuda", False, 0.8, 0.95)(logits, [0, 1, 2, 3])
    b = Picker([9, 9, 3, 9], "cuda", False, 0.8, 0.95)(logits[2:3], [2])
    assert a.device.type == "cpu" and b.tolist() == a[2:3].tolist()


@cuda
@pytest.mark.parametrize("compiled", [False, True])
def test_cuda_static_decoder_matches_shared_prefix_greedy(tiny_llama_dir, compiled: bool) -> None:
    cfg = GenerationConfig(model=str(tiny_llama_dir), dtype="float32", device="cuda", max_new_tokens=8, batch_size=8)
    g = TransformersGenerator(cfg, static=None if compiled else True)
    ref = TransformersGenerator(cfg, model=g.model, tokenizer=g.tokenizer, static=False)
    assert g.decoder() == "static" and ref.decoder() == "shared-prefix"
    assert g.generate(CHATS, SEEDS, greedy=True) == ref.generate(CHATS, SEEDS, greedy=True)
    assert g.generate(CHATS, SEEDS) == g.generate(CHATS, SEEDS)  # same seeds, same samples
