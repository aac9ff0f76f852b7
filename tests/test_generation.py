"""The transformers generator on a tiny random Llama loaded through the real-model code path:
per-sample seeds, batch independence, greedy decoding, max_new_tokens, stop tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from alignment.errors import UserError
from alignment.generation import GenerationConfig, chat_for, make_generator, sample_seed
from alignment.generation.hf import TransformersGenerator

CHATS = [
    chat_for("You are a careful assistant.", "What is 2 + 2? " + "Think. " * n)
    for n in (0, 40, 7, 90, 3, 25)
]


def gen(model_dir: Path, shared_prefix: bool | None = None, **kw) -> TransformersGenerator:
    cfg = GenerationConfig(model=str(model_dir), device="cpu", **{"max_new_tokens": 12, "batch_size": 16, **kw})
    g = make_generator(cfg)  # the same path as a hub id or the embedded preset
    assert isinstance(g, TransformersGenerator)
    if shared_prefix is not None:
        g.shared_prefix = shared_prefix
    return g


both_paths = pytest.mark.parametrize("shared", [True, False], ids=["shared-prefix", "batched"])


def seeds_for(chats: list, n: int, base: int = 0) -> list[list[int]]:
    return [[sample_seed(base, f"ex-{i}", "orig", s) for s in range(n)] for i in range(len(chats))]


@pytest.fixture(scope="module")
def g12(tiny_llama_dir: Path) -> TransformersGenerator:
    return gen(tiny_llama_dir)


def test_loads_through_the_real_model_path(tiny_llama_dir: Path, g12: TransformersGenerator) -> None:
    assert (tiny_llama_dir / "model.safetensors").is_file()
    assert g12.tokenizer.padding_side == "left" and g12.tokenizer.pad_token is not None
    assert not g12.model.training and str(g12.model.device) == "cpu"
    assert g12.model_id == str(tiny_llama_dir)
    rendered = g12.render(CHATS[0])
    assert rendered.endswith("<|assistant|>\n") and "What is 2 + 2?" in rendered


def test_bad_model_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot load"):
        gen(tmp_path)  # an existing folder without tokenizer or weights
    with pytest.raises(UserError, match="cannot load"):
        gen(tmp_path / "missing")


def test_shapes_and_counts(g12: TransformersGenerator) -> None:
    out = g12.generate(CHATS[:3], [[1, 2, 3], [4], [5, 6]])
    assert [len(o) for o in out] == [3, 1, 2]
    assert all(isinstance(t, str) for o in out for t in o)
    assert g12.generate([], []) == []


def test_same_seeds_same_texts(tiny_llama_dir: Path, g12: TransformersGenerator) -> None:
    seeds = seeds_for(CHATS, 2)
    a = g12.generate(CHATS, seeds)
    b = gen(tiny_llama_dir).generate(CHATS, seeds)  # a fresh load gives the same texts
    assert a == b
    c = g12.generate(CHATS, seeds_for(CHATS, 2, base=1))
    assert a != c
    assert len({t for o in a for t in o}) > len(CHATS)  # samples of one prompt differ


@both_paths
def test_sample_does_not_depend_on_batch_neighbours(tiny_llama_dir: Path, shared: bool) -> None:
    """Per-sample seeds: a sample's text is the same alone, in any batch size, next to any
    other prompts (with left padding of different lengths) and in any position. In fp32: on a
    CPU with native bf16, `dtype: auto` is bf16, whose matmuls round differently with the batch
    shape, so logits (and then samples) may differ; the guarantee is for identical logits."""
    seeds = seeds_for(CHATS, 2)
    reference = gen(tiny_llama_dir, False, batch_size=1, dtype="float32").generate(CHATS, seeds)
    for bs in (3, 5, 12):
        assert gen(tiny_llama_dir, shared, batch_size=bs, dtype="float32").generate(CHATS, seeds) == reference, bs
    g = gen(tiny_llama_dir, shared, batch_size=12, dtype="float32")
    order = [3, 0, 5, 1, 4, 2]
    shuffled = g.generate([CHATS[i] for i in order], [seeds[i] for i in order])
    assert [shuffled[order.index(i)] for i in range(len(CHATS))] == reference
    # Only one of a prompt's samples, next to a long neighbour.
    alone = g.generate([CHATS[3], CHATS[2]], [[seeds[3][1]], [seeds[2][0]]])
    assert alone == [[reference[3][1]], [reference[2][0]]]


@both_paths
def test_sample_does_not_depend_on_batch_neighbours_greedy(tiny_llama_dir: Path, shared: bool) -> None:
    seeds = seeds_for(CHATS, 1)
    reference = gen(tiny_llama_dir, False, batch_size=1).generate(CHATS, seeds, greedy=True)
    assert gen(tiny_llama_dir, shared, batch_size=16).generate(CHATS, seeds, greedy=True) == reference


@both_paths
def test_greedy_rows_share_a_call_with_sampled_rows(tiny_llama_dir: Path, shared: bool) -> None:
    """A seed of None decodes that row greedily in the same batch (one prefill per prompt)."""
    g, seeds = gen(tiny_llama_dir, shared), seeds_for(CHATS, 2)
    mixed = g.generate(CHATS, [[ss[0], None, ss[1]] for ss in seeds])
    sampled = g.generate(CHATS, seeds)
    greedy = g.generate(CHATS, [[0] for _ in CHATS], greedy=True)
    assert [[m[0], m[2]] for m in mixed] == sampled
    assert [[m[1]] for m in mixed] == greedy


def test_greedy_equals_temperature_zero(tiny_llama_dir: Path, g12: TransformersGenerator) -> None:
    greedy = g12.generate(CHATS, seeds_for(CHATS, 2), greedy=True)
    assert all(o[0] == o[1] for o in greedy)  # seeds do not matter when greedy
    t0 = gen(tiny_llama_dir, temperature=0.0).generate(CHATS, seeds_for(CHATS, 2, base=9))
    assert t0 == greedy
    sampled = g12.generate(CHATS, seeds_for(CHATS, 2))
    assert sampled != greedy


@both_paths
@pytest.mark.parametrize("limit", [1, 5])
def test_max_new_tokens_is_respected(tiny_llama_dir: Path, monkeypatch, shared: bool, limit: int) -> None:
    g = gen(tiny_llama_dir, shared, max_new_tokens=limit)
    lengths: list[int] = []
    original_text = g._text
    monkeypatch.setattr(g, "_text", lambda ids: (lengths.append(len(ids)), original_text(ids))[1])
    calls = {"n": 0}
    forward = g.model.forward

    def counting(*a, **k):
        calls["n"] += 1
        return forward(*a, **k)

    monkeypatch.setattr(g.model, "forward", counting)
    out = g.generate(CHATS[:3], [[1, 2]] * 3)
    assert [len(o) for o in out] == [2, 2, 2]
    assert len(lengths) == 6 and max(lengths) <= limit
    # One prefill per batch, then one step per further token (none after the last one).
    if shared:
        assert calls["n"] <= 3 * limit
    else:
        assert calls["n"] == limit


@both_paths
def test_stop_token_ends_a_sample_and_leaves_the_others(tiny_llama_dir: Path, monkeypatch, shared: bool) -> None:
    g = gen(tiny_llama_dir, shared, max_new_tokens=10)
    captured: list[list[int]] = []
    original_text = g._text
    monkeypatch.setattr(g, "_text", lambda ids, f=original_text: (captured.append(list(ids)), f(ids))[1])
    seeds = [[11, 12], [13]]
    g.generate(CHATS[:2], seeds)
    first = captured[:]
    stop = first[0][3]  # pretend the 4th token of the first sample were an end-of-turn token
    captured.clear()
    g.stop = g.stop | {stop}
    out = g.generate(CHATS[:2], seeds)
    flat = [t for o in out for t in o]
    for ids, text in zip(first, flat, strict=True):
        cut = ids[: ids.index(stop)] if stop in ids else ids
        assert text == g.tokenizer.decode(cut, skip_special_tokens=True).strip()
    assert stop in first[0] and len(captured[0]) == len(first[0])  # pads after the stop


@both_paths
def test_every_token_a_stop_gives_empty_texts(tiny_llama_dir: Path, shared: bool) -> None:
    g = gen(tiny_llama_dir, shared, max_new_tokens=8)
    g.stop = set(range(len(g.tokenizer)))
    assert g.generate(CHATS[:2], [[1], [2, 3]]) == [[""], ["", ""]]


def test_top_p_one_token_is_deterministic() -> None:
    import torch

    from alignment.generation.draws import top_p_sample

    logits = torch.tensor([[0.0, 5.0, 1.0, -1.0], [3.0, 0.0, 0.0, 0.0]])
    gens = [torch.Generator().manual_seed(i) for i in range(2)]
    # top_p tiny: only the most likely token survives.
    assert top_p_sample(logits, 1.0, 1e-6, gens).tolist() == [1, 0]
    # Same generator seeds, same picks; picks are valid token ids.
    a = top_p_sample(logits, 1.0, 0.9, [torch.Generator().manual_seed(7) for _ in range(2)])
    b = top_p_sample(logits, 1.0, 0.9, [torch.Generator().manual_seed(7) for _ in range(2)])
    assert a.tolist() == b.tolist() and all(0 <= t < 4 for t in a.tolist())


def test_top_p_sampling_is_robust_to_float_noise() -> None:
    """Float noise of the size batch shape causes (~1e-6) must not change which token a seed
    picks: sampling happens in vocabulary order, so near-ties swapping in the sort are harmless."""
    import torch

    from alignment.generation.draws import top_p_sample

    torch.manual_seed(0)
    n = 2000
    logits = torch.randn(n, 600) * 0.12  # near-uniform, like a random model
    noisy = logits + torch.randn_like(logits) * 1e-5
    a = top_p_sample(logits, 0.8, 0.95, [torch.Generator().manual_seed(i) for i in range(n)])
    b = top_p_sample(noisy, 0.8, 0.95, [torch.Generator().manual_seed(i) for i in range(n)])
    assert int((a != b).sum()) <= 2


def test_sample_seed_is_stable() -> None:
    # Pinned: changing how seeds derive would silently change every stored response.
    assert sample_seed(0, "ex-1", "orig", 3) == sample_seed(0, "ex-1", "orig", 3)
    assert len({sample_seed(0, "ex", v, s) for v in ("orig", "cf") for s in range(50)}) == 100
    assert 0 <= sample_seed(5, "x") < 2**63


@pytest.mark.parametrize(
    "flags, dtype, why",
    [
        (frozenset({"avx2", "fma"}), "float32", "lacks avx512_bf16/amx_bf16"),
        (frozenset({"avx2", "avx512_bf16"}), "bfloat16", "natively (avx512_bf16)"),
        (None, "float32", "unreadable"),
    ],
)
def test_auto_dtype_follows_the_cpu(tiny_llama_dir: Path, monkeypatch, flags, dtype: str, why: str) -> None:
    """`dtype: auto` on CPU: bf16 only with native bf16 instructions; the generator reports what it used."""
    import torch

    from alignment.generation import models

    monkeypatch.setattr(models, "cpu_flags", lambda: flags)
    g = gen(tiny_llama_dir, dtype="auto", max_new_tokens=4)
    assert g.model.dtype == getattr(torch, dtype)
    assert g.runtime["dtype"] == dtype and why in g.runtime["dtype_reason"]
    assert g.runtime["decoder"] == "shared-prefix"
    assert [len(o) for o in g.generate(CHATS[:2], [[1, 2], [3]])] == [2, 1]


def test_explicit_dtype_is_kept(tiny_llama_dir: Path, monkeypatch) -> None:
    from alignment.generation import models

    monkeypatch.setattr(models, "cpu_flags", lambda: frozenset({"amx_bf16"}))
    g = gen(tiny_llama_dir, dtype="float32")
    assert g.runtime["dtype"] == "float32" and g.runtime["dtype_reason"] == "set in the config"
    assert models.resolve_dtype("auto", "cuda:1") == ("bfloat16", "auto: CUDA device")


@pytest.mark.parametrize("top_p", [0.5, 0.95, 1.0])
def test_nucleus_equals_sorting_the_whole_vocabulary(top_p: float) -> None:
    """The top-k nucleus keeps exactly the tokens the full sort keeps (up to the order of exact
    ties at the cut), from peaked to nearly flat distributions."""
    import torch

    from alignment.generation.draws import nucleus

    torch.manual_seed(0)
    for scale in (0.05, 1.0, 4.0, 20.0):
        probs = torch.softmax(torch.randn(32, 5000) * scale, dim=-1)
        sorted_p, order = probs.sort(dim=-1, descending=True)
        drop = sorted_p.cumsum(-1) - sorted_p >= top_p
        want = ~torch.zeros_like(drop).scatter(1, order, drop)
        got = nucleus(probs, top_p)
        assert torch.equal(got.sum(-1), want.sum(-1)), scale
        for r, c in (got != want).nonzero().tolist():
            assert int((probs[r] == probs[r, c]).sum()) > 1  # only tied probabilities may swap


@pytest.mark.parametrize("quiet", [False, True])
def test_quiet_silences_the_gguf_conversions_own_progress_bar(quiet: bool, tmp_path: Path, capsys, monkeypatch) -> None:
    """transformers draws the first run's GGUF conversion bar with a tqdm of its own module, which
    --quiet did not reach. The loaders are stand-ins that draw that module's bar, as the real
    conversion does (about 30 s), then stop the conversion."""
    import transformers
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    from alignment.generation.models import embedded_model_dir
    from alignment.runtime.console import run_log

    class Converted(Exception):
        pass

    def convert(*args: object, **kwargs: object) -> None:
        list(gguf_utils.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors..."))
        raise Converted

    original = gguf_utils.tqdm
    monkeypatch.setenv("ALIGNMENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", convert)
    capsys.readouterr()
    with run_log(tmp_path / "run", quiet=quiet), pytest.raises(Converted):
        embedded_model_dir()
    assert ("Converting" in capsys.readouterr().err) == (not quiet)
    assert gguf_utils.tqdm is original  # put back for later loads
