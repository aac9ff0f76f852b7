"""Model names: presets resolve inside generation, organisms only through the run's `with_paths`."""

from __future__ import annotations

from pathlib import Path

import pytest

import alignment.organism as organism
from alignment.errors import UserError
from alignment.generation.base import GenerationConfig
from alignment.generation.models import EMBEDDED, embedded_model_dir, model_path
from alignment.organism.presets import resolve, with_paths
from alignment.reward.base import RewardConfig


def test_a_backend_resolves_presets_and_passes_paths_through() -> None:
    assert model_path("skywork-reward-llama-3.1-8b-v0.2") == "Skywork/Skywork-Reward-Llama-3.1-8B-v0.2"
    assert model_path("/models/mine") == "/models/mine"


def test_an_unresolved_organism_reaching_a_backend_is_one_clear_line() -> None:
    with pytest.raises(UserError, match="organism-policy.*unresolved") as e:
        model_path("organism-policy")
    assert "\n" not in str(e.value)


def test_with_paths_swaps_organism_names_for_their_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folders = {"organism-policy": tmp_path / "p", "organism-rm": tmp_path / "r"}
    monkeypatch.setattr(organism, "trained_path", folders.get)
    gen = GenerationConfig(model="organism-policy", n_samples=3)
    got = with_paths(gen)
    assert got.model == str(tmp_path / "p") and got.n_samples == 3
    assert gen.model == "organism-policy"  # the stage's own section (and so its key) keeps the name
    assert with_paths(RewardConfig(model="organism-rm")).model == str(tmp_path / "r")
    plain = GenerationConfig(model="llama-3.1-8b-instruct")
    assert with_paths(plain) is plain  # presets are generation's own: left for the backend
    assert resolve(EMBEDDED) == str(embedded_model_dir()) == model_path(EMBEDDED)


def test_an_organism_not_trained_yet_says_how_to_train_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(organism, "trained_path", lambda name: None)
    with pytest.raises(UserError, match="alignment organism train organism-rm"):
        with_paths(RewardConfig(model="organism-rm"))
