"""`alignment results render`: every results/ page is its data file, rendered; a hand edit fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from alignment.cli import main
from alignment.cli.results import pages, render

ROOT = Path(__file__).resolve().parents[1] / "results"


def test_every_committed_results_page_is_its_data_file_rendered() -> None:
    assert render(ROOT, check=True) == []
    names = {p.stem for p in ROOT.glob("*.md")}
    assert names == set(pages(ROOT)), "a results page without a data file and renderer"


def test_a_hand_edited_page_or_a_changed_data_file_fails_the_check(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = Path(shutil.copytree(ROOT, tmp_path / "results"))
    page = root / "embedded_seeds.md"
    page.write_text(page.read_text().replace("+37.7", "+38.7"))
    assert main(["results", "render", "--check", "--dir", str(root)]) == 2
    assert "embedded_seeds.md" in capsys.readouterr().err
    assert main(["results", "render", "--dir", str(root)]) == 0 and render(root, check=True) == []
    csv = root / "embedded_seeds.csv"
    csv.write_text(csv.read_text().replace("0.3770914270914272", "0.5"))
    assert render(root, check=True) == [str(page)]


def test_withdrawn_pages_carry_no_figures() -> None:
    import re

    for name in ("organism_dpo", "cluster_overhead", "cluster_projection"):
        text = (ROOT / f"{name}.md").read_text()
        assert "Figures withdrawn until re-measured" in text
        body = text.split("\n", 2)[2].replace("67030c9", "").replace("0-4", "")
        assert not re.search(r"\d+\.\d", body), f"{name}.md still quotes a figure"
