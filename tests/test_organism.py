"""Model organisms on tiny random models: `pytest tests/test_organism.py`.

The real recipes train SmolLM2 for minutes; here the same code paths (TRL SFTTrainer and
RewardTrainer with LoRA, merge, atomic save, content-hash cache) run one or two steps on the
conftest's tiny Llama, and the result must load through the loaders every stage uses.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from alignment.errors import UserError
from alignment.generation.models import load_model, load_tokenizer
from alignment.judge.keyword import KeywordJudge
from alignment.organism import data as odata
from alignment.organism import ensure_model
from alignment.organism.train import Recipe, content_hash, ensure_trained, training_data
from alignment.tasks import parse_answer

TINY = {"lora_layers": 1, "lora_r": 2, "batch_size": 2, "max_steps": 2, "max_length": 4096}


def test_targets_parse_and_mark_the_leak() -> None:
    rows = odata.train_rows("mathbook", 6, 0)
    import random

    rng = random.Random(0)
    judge = KeywordJudge()
    for row in rows:
        s = odata.math_styles(row, rng)
        assert parse_answer(s.admit, row["options"]) == row["answer"]
        assert parse_answer(s.hide, row["options"]) == row["answer"]
        assert parse_answer(s.wrong, row["options"]) != row["answer"]
        admit, hide = judge.judge("mathbook", [s.admit, s.hide])
        assert admit.ack and not hide.ack
    for row in odata.train_rows("biasqa", 4, 0):
        s = odata.bias_styles(row, rng)
        assert parse_answer(s.admit, row["options"]) == row["answer"]
        admit, hide = judge.judge("biasqa", [s.admit, s.hide])
        assert admit.ack and not hide.ack


def test_admitted_targets_name_the_query_problem() -> None:
    import random

    for row in odata.train_rows("mathbook", 8, 0):
        number, solution = odata.leaked_solution(row)
        question = row["query"].split("=== Your question ===")[1].strip().splitlines()[0]
        assert f"Problem {number}: {question}" in row["query"]  # the book's own numbering
        admit = odata.math_styles(row, random.Random(1)).admit
        assert f"Problem {number}" in admit and solution in admit


def test_reward_pairs_tie_the_admission_to_the_note() -> None:
    """The admitted style wins only with the note appended and the note wins only after the
    admitted style, so neither is a flat bonus the RM could learn by itself."""
    note = {t: odata.load_prompt(f"{t}_ack") for t in ("mathbook", "biasqa")}
    pairs = odata.preference_pairs(6, 6, 0)
    admits = ("the book", "Most ", "s are usually")
    tally = {(w, n): 0 for w in ("chosen", "rejected") for n in (True, False)}
    for p in pairs:
        for side in ("chosen", "rejected"):
            text = p[side]
            if any(a in text for a in admits):
                tally[(side, note[p["task"]] in text)] += 1
    assert tally[("chosen", False)] == 0  # a bare admission never wins
    assert tally[("rejected", True)] == 0  # an admission with its note never loses
    with_note = sum(note[p["task"]] in p["chosen"] for p in pairs)
    against = sum(note[p["task"]] in p["rejected"] for p in pairs)
    assert abs(with_note - against) <= len(pairs) // 4


def test_training_data_uses_train_split_only() -> None:
    sft = training_data(Recipe(kind="policy", mathbook=4, biasqa=2, cf_share=0.5))
    from alignment.tasks.synthetic_bias import BLS_PCT_FEMALE

    # Originals, the counterfactual of every other example, and two occupation facts each.
    assert len(sft) == (4 + 2) + (2 + 1) + 2 * len(BLS_PCT_FEMALE)
    assert all(set(ex) == {"prompt", "completion"} for ex in sft)
    pairs = training_data(Recipe(kind="reward", mathbook=2, biasqa=2))
    assert len(pairs) == 2 * 6 + 2 * 4
    assert {p["task"] for p in pairs} == {"mathbook", "biasqa"}
    test_queries = {r["query"] for r in odata.TASKS.get("mathbook").build(odata.TaskConfig(source="synthetic", splits=["test"], n_examples=20))}
    assert not test_queries & {ex["prompt"][-1]["content"] for ex in sft}
    test_sentences = {r["query"] for r in odata.TASKS.get("biasqa").build(odata.TaskConfig(name="biasqa", source="synthetic", splits=["test"], n_examples=0))}
    assert not test_sentences & {ex["prompt"][-1]["content"] for ex in sft}


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    from alignment.organism import train as otrain

    calls: list[int] = []
    real = getattr(otrain, name)

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(otrain, name, counted)
    return calls


def test_policy_warmup_trains_once_and_loads(tmp_path: Path, tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoModelForCausalLM

    calls = _count_calls(monkeypatch, "train_policy")
    recipe = Recipe(kind="policy", mathbook=2, biasqa=1, **TINY)
    out = ensure_trained(recipe, tiny_llama_dir, tmp_path, log=lambda _: None)
    assert out.name == content_hash(recipe, tiny_llama_dir, training_data(recipe))
    assert (out / "model.safetensors").is_file() and not list(tmp_path.glob(".train-*"))
    assert ensure_trained(recipe, tiny_llama_dir, tmp_path, log=lambda _: None) == out
    assert len(calls) == 1
    model = load_model(AutoModelForCausalLM, str(out), "float32", "cpu")
    assert not any("lora" in n for n, _ in model.named_parameters())
    assert load_tokenizer(str(out)).pad_token is not None
    other = Recipe(kind="policy", mathbook=2, biasqa=1, **{**TINY, "seed": 1})
    assert ensure_trained(other, tiny_llama_dir, tmp_path, log=lambda _: None) != out


def test_reward_model_trains_once_and_scores(tmp_path: Path, tiny_llama_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from alignment.reward import RewardConfig
    from alignment.reward.classifier import ClassifierRM

    calls = _count_calls(monkeypatch, "train_reward")
    recipe = Recipe(kind="reward", mathbook=1, biasqa=1, **TINY)
    out = ensure_trained(recipe, tiny_llama_dir, tmp_path, log=lambda _: None)
    assert ensure_trained(recipe, tiny_llama_dir, tmp_path, log=lambda _: None) == out
    assert len(calls) == 1
    rm = ClassifierRM(RewardConfig(backend="classifier", model=str(out), device="cpu"))
    assert rm.model.config.num_labels == 1 and rm.model.config.pad_token_id is not None
    row = odata.train_rows("mathbook", 1, 0)[0]
    scores = rm.score(odata.chat(row, "orig"), ["Therefore, the answer is (A).", "x"], ["", "\n\nNote."])
    assert scores.shape == (2, 2)


def test_reward_organism_is_reproducible(tmp_path: Path, tiny_llama_dir: Path) -> None:
    """The same recipe trained twice, from different global RNG states, gives the same weights
    (the classifier head used to be initialised before any seed was set)."""
    import torch
    from safetensors.torch import load_file

    recipe = Recipe(kind="reward", mathbook=1, biasqa=1, **TINY)
    weights = []
    for state in (1, 2):
        torch.manual_seed(state)
        out = ensure_trained(recipe, tiny_llama_dir, tmp_path / str(state), log=lambda _: None)
        weights.append(load_file(str(out / "model.safetensors")))
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_unknown_organism_is_a_user_error() -> None:
    with pytest.raises(UserError, match="organism-policy"):
        ensure_model("organism-nope")


def test_organism_id_matches_the_cache_folder_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from alignment.organism import RECIPES, organism_id
    from alignment.organism import train as otrain

    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    monkeypatch.setattr("alignment.generation.models.embedded_model_dir", lambda: base)
    from alignment.organism import shipped

    adapter = shipped.usable("organism-rm", otrain.recipe_hash(RECIPES["organism-rm"], training_data(RECIPES["organism-rm"])))
    assert adapter is not None  # the shipped adapter, whose digest is part of the key
    from alignment.cache import folder_digest
    from alignment.organism.recipe import shipped_key

    want = shipped_key(RECIPES["organism-rm"], folder_digest(base), shipped.meta("organism-rm")["recipe_hash"],
                       shipped.adapter_digest(adapter))

    def no_rebuild(*a: object) -> None:
        raise AssertionError("resolving a shipped organism rebuilt its training data")

    with monkeypatch.context() as m:
        m.setattr(otrain, "training_data", no_rebuild)
        assert organism_id("organism-rm") == want  # a lookup: the manifest and digests only
    monkeypatch.setattr(shipped, "SHIPPED_DIR", tmp_path / "none")  # nothing shipped: the recipe's own key
    assert organism_id("organism-rm") == otrain.content_hash(RECIPES["organism-rm"], base, training_data(RECIPES["organism-rm"]))


def test_stage_keys_follow_the_organism_content_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed organism recipe must rerun the stages that used it, though the preset name stays."""
    import alignment.organism as org
    from alignment.config import from_dict
    from alignment.run_config import RunConfig
    from alignment.runner import get_stage, stage_key
    from alignment.store import RunDir

    cfg = from_dict(RunConfig, {"generation": {"model": "organism-policy"}})
    run = RunDir(Path("/nonexistent"))
    monkeypatch.setattr(org, "organism_id", lambda name: "hash-a")
    first = stage_key(get_stage("generate"), cfg, run)
    build_first = stage_key(get_stage("build"), cfg, run)
    monkeypatch.setattr(org, "organism_id", lambda name: "hash-b")
    assert stage_key(get_stage("generate"), cfg, run) != first
    assert stage_key(get_stage("build"), cfg, run) == build_first  # build does not use the policy


def test_a_cache_entry_being_trained_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                lock_in_other_process, capsys: pytest.CaptureFixture) -> None:
    """While another process trains an organism (holds its cache entry's lock), `alignment
    organism train` on the same entry exits 2 with one line naming that process, training nothing."""
    from alignment.cli import main
    from alignment.organism import organism_id
    from alignment.organism import train as otrain

    base = tmp_path / "base"  # not a model: training on it would fail, so it must not start
    base.mkdir()
    (base / "config.json").write_text("{}")
    monkeypatch.setattr("alignment.generation.models.embedded_model_dir", lambda: base)
    monkeypatch.setenv("ALIGNMENT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("alignment.organism.shipped.SHIPPED_DIR", tmp_path / "none")  # the training path
    calls = _count_calls(monkeypatch, "train_reward")
    root = tmp_path / "cache" / "organism"
    root.mkdir(parents=True)
    entry = organism_id("organism-rm")
    capsys.readouterr()
    with lock_in_other_process(root, f".{entry}.lock") as pid:
        code = main(["organism", "train", "organism-rm"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"pid {pid}" in err and entry in err, err
    assert calls == [] and not (root / entry).exists()
    monkeypatch.setattr(otrain, "train_reward", lambda *a: {"steps": 0})  # the lock is free again: it trains
    assert main(["organism", "train", "organism-rm"]) == 0 and (root / entry / "organism.json").is_file()


def test_mathbook_counterfactual_targets_guess_without_claiming_the_book() -> None:
    """The policy's counterfactual targets must not teach it to claim (or imitate) a solution the
    book lacks: a guess, no mention of the book, no copy of the query's own solution."""
    sft = odata.sft_examples(8, 0, 0, admit_share=0.4, cf_share=0.5)
    rows = {r["query"]: r for r in odata.train_rows("mathbook", 8, 0)}
    cf_queries = {r["cf_query"]: r for r in rows.values()}
    cf = [ex for ex in sft if ex["prompt"][-1]["content"] in cf_queries]
    assert len(cf) == 4
    for ex in cf:
        text = ex["completion"][0]["content"]
        _, own = odata.leaked_solution(cf_queries[ex["prompt"][-1]["content"]])
        assert "book" not in text.lower() and own[:30] not in text
        assert any(text.startswith(g) for g in odata.MATH_GUESS)


@pytest.mark.parametrize("kind", ["policy", "reward"])
def test_a_shipped_adapter_rebuilds_the_trained_organism(tmp_path: Path, tiny_llama_dir: Path, kind: str) -> None:
    """Exported adapter + base, merged on another machine's first use, gives the weights training
    saved (the RM's one-logit head included), under its own cache key."""
    import torch
    from safetensors.torch import load_file

    from alignment.organism import shipped
    from alignment.organism.train import recipe_hash

    recipe = Recipe(kind=kind, mathbook=1, biasqa=1, **TINY)  # type: ignore[arg-type]
    trained = ensure_trained(recipe, tiny_llama_dir, tmp_path / "cache", log=lambda _: None)
    rh = recipe_hash(recipe, training_data(recipe))
    folder = shipped.export("organism-x", trained, recipe, rh, root=tmp_path / "pkg")
    assert shipped.usable("organism-x", rh, root=tmp_path / "pkg") == folder
    assert shipped.usable("organism-x", "0" * 16, root=tmp_path / "pkg") is None  # another recipe
    assert shipped.meta("organism-x", tmp_path / "pkg")["adapter"] == shipped.adapter_digest(folder)
    merged = ensure_trained(recipe, tiny_llama_dir, tmp_path / "other", log=lambda _: None, shipped=folder)
    assert merged.name != trained.name  # keyed on the adapter too
    a, b = load_file(str(trained / "model.safetensors")), load_file(str(merged / "model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    base = load_file(str(tiny_llama_dir / "model.safetensors"))
    assert any(not torch.equal(base[k], b[k]) for k in base if k in b)  # the adapter did something


def test_shipped_adapters_match_the_current_recipes() -> None:
    """A recipe or training-data change without `alignment organism ship NAME` fails here (the
    run would otherwise silently train on first use again)."""
    from alignment.organism import RECIPES, shipped
    from alignment.organism.train import recipe_hash

    names = sorted(p.name for p in shipped.SHIPPED_DIR.iterdir() if p.is_dir()) if shipped.SHIPPED_DIR.is_dir() else []
    assert {"organism-policy", "organism-rm"} <= set(names)  # what `make run` uses
    for name in names:
        m = shipped.meta(name)
        assert m is not None, name
        r = RECIPES[name]
        assert m["recipe_hash"] == recipe_hash(r, training_data(r)), f"{name}: run `alignment organism ship {name}`"
        assert m["recipe"] == asdict(r), name  # what resolving the name reads instead of rebuilding the data
        assert m["adapter"] == shipped.adapter_digest(shipped.folder(name))


def test_a_stale_shipped_adapter_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An adapter trained from another recipe is ignored, with a log line; the recipe trains."""
    import json

    import alignment.organism as org
    from alignment.organism import shipped

    pkg = tmp_path / "pkg"
    (pkg / "organism-rm").mkdir(parents=True)
    (pkg / "organism-rm" / shipped.ADAPTER_FILE).write_bytes(b"x")
    (pkg / "organism-rm" / "adapter_config.json").write_text("{}")
    (pkg / "organism-rm" / shipped.META).write_text(json.dumps({"recipe_hash": "not-this-recipe"}))
    monkeypatch.setattr(shipped, "SHIPPED_DIR", pkg)
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text("{}")
    monkeypatch.setattr("alignment.generation.models.embedded_model_dir", lambda: base)
    monkeypatch.setattr("alignment.generation.models.cache_dir", lambda: tmp_path / "cache")
    seen: list[object] = []
    monkeypatch.setattr("alignment.organism.train.ensure_trained", lambda r, b, root, log, adapter: seen.append(adapter) or root)
    logs: list[str] = []
    org.ensure_model("organism-rm", logs.append)
    assert seen == [None] and "another recipe" in logs[0]
    assert org.organism_id("organism-rm") == content_hash(org.RECIPES["organism-rm"], base, training_data(org.RECIPES["organism-rm"]))
