"""report.html: the page's numbers match report.md, it is self-contained, and in headless
Chromium its sections render and the URL-hash filters change what is shown."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from fake_run import fake_run, label_sample

from alignment.context import Context
from alignment.stages.report import report
from alignment.store import RunDir
from alignment.tasks import TASKS
from alignment.viewer import render_page


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    return fake_run(tmp_path_factory.mktemp("viewer") / "run")


@pytest.fixture(scope="module")
def labelled(run: RunDir, tmp_path_factory: pytest.TempPathFactory) -> tuple[RunDir, list[dict]]:
    """The same run after a person labelled a 12-row sample (3 against the judge, 1 left blank)
    and the report was rebuilt."""
    copy = RunDir(shutil.copytree(run.path, tmp_path_factory.mktemp("labelled") / "run"))
    rows = label_sample(copy, n=12, flip_every=4, unlabelled=1)
    report(None, Context(copy, TASKS.get("mathbook"), quiet=True))
    return copy, rows


def blob(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_page_holds_report_numbers_and_figures_offline(run: RunDir) -> None:
    page = (run.path / "report.html").read_text()
    md = (run.path / "report.md").read_text()
    gap = re.search(r"Gap orig − cf in accuracy: \*\*([+-]\d+\.\d points)\*\*, 95% CI (\[[^\]]+\])", md)
    assert gap is not None and f"<strong>{gap.group(1)}</strong>, 95% CI {gap.group(2)}" in page
    assert "![best-of-N](bon/bon.png)" in md and 'src="data:image/png;base64,' in page
    assert not re.search(r'(src|href)="(https?:)?//', page), "the page must not load anything from the network"
    for section in ('id="summary"', 'id="judge-control"', 'id="browser"'):
        assert section in page


def test_blob_has_every_response_and_the_judges_evidence(run: RunDir) -> None:
    data = blob((run.path / "report.html").read_text())
    gen, ack = run.read("generate"), run.read("ack")
    assert len(data["responses"]) == len(gen)
    f = {name: i for i, name in enumerate(data["fields"])}
    marked = [r for r in data["responses"] if isinstance(r[f["text"]], list)]
    assert len(marked) == int(ack["ack"].sum()) > 0  # the keyword judge quotes its deciding sentence
    for r in marked:
        before, span, after = r[f["text"]]
        assert span and span in r[f["ack_raw"]] and r[f["ack"]] is True
    ex = data["examples"][0]
    assert any(tag == 1 for tag, _ in ex["diff"]) and any(tag == 2 for tag, _ in ex["diff"])


def test_judge_control_rates_are_the_counterfactual_and_original_ack_rates(run: RunDir) -> None:
    page = (run.path / "report.html").read_text()
    ack = run.read("ack")
    for v in ("orig", "cf"):
        expected = f"{100 * ack[ack['variant'] == v]['ack'].mean():.1f}%"
        assert f'id="ack-rate-{v}">{expected}<' in page


def test_response_text_cannot_close_the_script(run: RunDir, tmp_path: Path) -> None:
    copy = RunDir(shutil.copytree(run.path, tmp_path / "run"))
    gen = copy.read("generate")
    gen.loc[0, "text"] = "</script><script>alert(1)</script> <!-- x"
    gen.to_parquet(copy.stage("generate") / "data.parquet")
    page = render_page(copy, (copy.path / "report.md").read_text(), "t", TASKS.get("mathbook"))
    assert page.count("</script>") == 2  # the data element and the app script: the text closed neither
    assert blob(page)["responses"][0][3] == gen.loc[0, "text"]


def test_without_labels_the_report_says_so_in_one_line(run: RunDir) -> None:
    md = (run.path / "report.md").read_text()
    section = md.split("## Judge against human labels\n\n", 1)[1].split("\n\n", 1)
    assert section[0].startswith("No human labels") and "\n" not in section[0] and section[1].strip() == ""
    assert 'id="labels-card"' not in (run.path / "report.html").read_text()


def test_labels_give_the_judge_card_and_every_disagreement(labelled: tuple[RunDir, list[dict]]) -> None:
    run, rows = labelled
    done = [r for r in rows if r["ack_label"] is not None]
    ack = run.read("ack").set_index(["example_id", "variant", "sample"])["ack"]
    wrong = [r["id"] for r in done if r["ack_label"] != bool(ack[(r["example_id"], r["variant"], r["sample"])])]
    accuracy = f"{100 * (1 - len(wrong) / len(done)):.1f}%"
    md, page = (run.path / "report.md").read_text(), (run.path / "report.html").read_text()
    assert f"| {len(done)} | " in md and f"| {accuracy} |" in md and "(skipped: 1 unlabelled)" in md
    assert f'id="labels-accuracy">{accuracy}<' in page and f'id="labels-disagreements">{len(wrong)}<' in page
    assert len(wrong) == 3 and page.count('<article class="disagreement">') == 3
    for rid in wrong:
        assert f"- `{rid}`: human **" in md and f"<strong>{rid}</strong>" in page
    data = blob(page)
    f = {name: i for i, name in enumerate(data["fields"])}
    examples = [e["id"] for e in data["examples"]]
    marked = {f"{examples[r[f['e']]]}/{r[f['variant']]}/{r[f['sample']]}": r[f["label"]] for r in data["responses"] if r[f["label"]] is not None}
    assert marked == {r["id"]: r["ack_label"] for r in done}


# --- a real browser -------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (`make test` installs Debian's chromium when run as root with apt)"
)


def browser(page: Path, fragment: str = "", screenshot: Path | None = None) -> str:
    """The DOM after the page's script ran (virtual time lets it finish), or a screenshot."""
    args = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--virtual-time-budget=5000", "--window-size=1280,5200"]
    args += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    out = subprocess.run([*args, page.resolve().as_uri() + fragment], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def shown(dom: str) -> tuple[int, list[str]]:
    count = re.search(r'id="shown-count">(\d+)<', dom)
    assert count is not None, "the browser script did not run"
    return int(count.group(1)), re.findall(r'<article class="card" data-variant="(\w+)"', dom)


@needs_chromium
def test_page_renders_and_filters_in_chromium(run: RunDir) -> None:
    page = run.path / "report.html"
    gen, ack = run.read("generate"), run.read("ack")
    dom = browser(page)
    for section in ('id="summary"', 'id="judge-control"', 'id="browser"', "<img"):
        assert section in dom
    total, cards = shown(dom)
    assert total == len(gen) and len(cards) == min(50, len(gen))
    n_cf, cards = shown(browser(page, "#variant=cf"))
    assert n_cf == int((gen["variant"] == "cf").sum()) and set(cards) == {"cf"}
    merged = gen.merge(ack, on=["example_id", "variant", "sample"])
    n_ack, cards = shown(browser(page, "#variant=orig&ack=1&sort=-rm&prompts=1"))
    dom = browser(page, "#variant=orig&ack=1&sort=-rm&prompts=1")
    assert n_ack == int((merged["ack"] & (merged["variant"] == "orig")).sum()) < total
    assert '<mark class="evidence">' in dom and '<del class="feature">' in dom and '<ins class="feature">' in dom
    shot = run.path / "report-screenshot.png"
    browser(page, "#variant=orig&ack=1&sort=-rm", screenshot=shot)
    assert shot.stat().st_size > 10_000


@needs_chromium
def test_thousand_responses_are_paged(tmp_path: Path) -> None:
    big = fake_run(tmp_path / "big", n_examples=63, n_samples=8)
    gen = big.read("generate")
    assert len(gen) >= 1000
    dom = browser(big.path / "report.html", "#page=3")
    total, cards = shown(dom)
    assert total == len(gen) and len(cards) == 50 and f"page 3 of {-(-total // 50)}" in dom
    assert pd.notna(total)


@needs_chromium
def test_disagreements_render_and_filter_in_chromium(labelled: tuple[RunDir, list[dict]]) -> None:
    run, rows = labelled
    page = run.path / "report.html"
    dom = browser(page)
    assert 'id="labels-card"' in dom and dom.count('<article class="disagreement">') == 3
    n, _ = shown(browser(page, "#human=labelled"))
    assert n == sum(r["ack_label"] is not None for r in rows)
    dom = browser(page, "#human=disagree")
    n, cards = shown(dom)
    assert n == len(cards) == 3 and re.findall(r'data-human="(\w+)"', dom) == ["disagree"] * 3
    assert dom.count('<span class="badge disagree">judge disagrees with the label</span>') == 3
    shot = run.path / "report-labels-screenshot.png"
    browser(page, "#human=disagree", screenshot=shot)
    assert shot.stat().st_size > 10_000
