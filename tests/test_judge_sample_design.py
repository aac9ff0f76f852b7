"""The labelling sample designed for the estimator, and its blind page:
`pytest -q tests/test_judge_sample_design.py` (the browser test needs Debian's chromium)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_judge_card import _fake_run

from alignment.cli import main
from alignment.judge_error.sample_design import size_for_width

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "sample.jsonl").read_text().splitlines()]


def _visible(page: str) -> str:
    """The page without its embedded data (what the labeller sees)."""
    return re.sub(r'<script type="application/json" id="rows">.*?</script>', "", page, flags=re.S)


def test_uniform_sample_sized_by_width(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    assert main(["judge", "sample", str(run), "--design", "uniform", "--width", "0.3"]) == 0
    rows = _rows(run / "judge_sample")
    # 48 responses, 6 flagged by the judge: planned at rate 0.125 with the finite-population correction.
    assert len(rows) == size_for_width(0.3, 6 / 48, 48) == len({r["id"] for r in rows})
    assert all(r["design"] == "uniform" and "weight" not in r and "stratum" not in r for r in rows)
    assert main(["judge", "sample", str(run), "--design", "uniform", "--n", "5", "--seed", "3"]) == 0
    assert len(_rows(run / "judge_sample")) == 5


def test_width_is_for_the_uniform_design_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _fake_run(tmp_path / "run")
    assert main(["judge", "sample", str(run), "--width", "0.2"]) == 2
    assert "--width sizes the uniform design" in capsys.readouterr().err
    assert main(["judge", "sample", str(run), "--design", "uniform", "--width", "1.5"]) == 2
    assert "--width: must be a fraction" in capsys.readouterr().err


@pytest.mark.parametrize("design", ["stratified", "uniform"])
def test_page_is_blind_to_verdict_variant_and_stratum(tmp_path: Path, design: str) -> None:
    run = _fake_run(tmp_path / "run")
    assert main(["judge", "sample", str(run), "--design", design, "--n", "12"]) == 0
    folder = run / "judge_sample"
    rows, page = _rows(folder), (folder / "sample.html").read_text()
    seen = _visible(page)
    for word in ("keyword: test", "no-ack", "orig/", "cf/", "/orig/", "/cf/", "judge"):
        assert word not in seen, word
    data = json.loads(re.search(r'id="rows">(.*?)</script>', page, flags=re.S).group(1))
    assert all("judge_ack" not in r and "judge_evidence" not in r and "stratum" not in r for r in data)
    assert [r["id"] for r in data] == [r["id"] for r in rows]
    assert all(("weight" in r) == (design == "stratified") for r in data)
    # Every response, counterfactual ones included, is shown its question's original feature.
    assert "person" not in seen and seen.count("nurse") == len(rows)
    # Shown in a shuffled order, not grouped by stratum.
    order = [int(i) for i in re.findall(r'data-row="(\d+)"', page)]
    assert sorted(order) == list(range(len(rows))) and order != sorted(order)


def _browser(page: Path, profile: Path) -> str:
    args = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
            "--virtual-time-budget=3000", "--dump-dom", page.resolve().as_uri()]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test` installs Debian's chromium when run as root with apt)")
def test_page_saves_progress_in_chromium(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    assert main(["judge", "sample", str(run), "--design", "uniform", "--n", "10"]) == 0
    page = run / "judge_sample" / "sample.html"
    profile = tmp_path / "profile"
    dom = _browser(page, profile)
    assert 'id="progress">0 of 10<' in dom
    # A choice made earlier in this browser (the page's own storage key) is restored on reopening.
    key = json.loads(re.search(r"const KEY = (\"[^\"]+\");", page.read_text()).group(1))
    seed = page.with_name("seed.html")
    seed.write_text(f"<script>localStorage.setItem({json.dumps(key)}, JSON.stringify({{'0': 'true', '4': 'false'}}));</script>")
    # Chromium writes localStorage to the profile asynchronously, and a headless instance that exits
    # at once may not have flushed it on a loaded machine (seen once in CI): seed up to three times.
    # A page that does not read its own key back still fails every time.
    for _ in range(3):
        _browser(seed, profile)
        dom = _browser(page, profile)
        if 'id="progress">2 of 10<' in dom:
            break
    assert 'id="progress">2 of 10<' in dom
