"""The labelling sample designed for the estimator, and its blind page:
`pytest -q tests/test_judge_sample_design.py` (the browser test needs Debian's chromium)."""

from __future__ import annotations

import html
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
    # The whole source, embedded data and script included (not only what the screen shows), less
    # the responses' own text, which the labeller must read (the fixture's texts name their variant).
    source = re.sub(r'<td class="text">.*?</td>', "", page, flags=re.S)
    words = set(re.findall(r"[a-z_]+", source.lower()))
    for r in rows:
        names = {r["variant"], r.get("policy"), r.get("stratum"), *str(r.get("stratum", "")).split("/")} - {None, ""}
        found = sorted(n for n in names if n.lower() in words or f"{n}/" in source or f"/{n}" in source)
        assert not found, found
        assert r["id"] not in source and (not r["judge_evidence"] or r["judge_evidence"] not in source)
        # A stratum's weight (its size over its draws) would identify it: no such number anywhere.
        if "weight" in r:
            # (as the sample file writes it; small integers such as row numbers "#8" are positions)
            assert json.dumps(r["weight"]) not in source and format(r["weight"], ".3g") + "," not in source, r["weight"]
    for word in ("stratum", "weight", "variant", "judge", "policy", "orig", "cf", "ack"):
        assert word not in words, word
    data = json.loads(re.search(r'id="rows">(.*?)</script>', page, flags=re.S).group(1))
    assert sorted(data) == sorted(r["label_id"] for r in rows) and all(re.fullmatch(r"L[0-9a-f]{12}", x) for x in data)
    seen = _visible(page)
    # Every response, counterfactual ones included, is shown its question's original feature.
    assert "person" not in seen and seen.count("nurse") == len(rows)
    # Shown in a shuffled order, not grouped by stratum; the page's positions are its own.
    assert data != [r["label_id"] for r in rows]
    assert [int(i) for i in re.findall(r'data-row="(\d+)"', page)] == list(range(len(rows)))
    assert page.count('value="unsure"') == len(rows)


def test_download_joins_back_to_the_sample_and_warns_on_a_changed_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _fake_run(tmp_path / "run")
    assert main(["judge", "sample", str(run), "--design", "stratified", "--n", "12"]) == 0
    capsys.readouterr()
    folder = run / "judge_sample"
    rows = _rows(folder)
    # What the page's download writes: opaque ids and choices only (one left unsure).
    download = [{"label_id": r["label_id"], "ack_label": (None if i == 0 else i % 3 == 0), "unsure": i == 0}
                for i, r in enumerate(rows)]
    (folder / "sample_labelled.jsonl").write_text("".join(json.dumps(d) + "\n" for d in download))
    judged = tmp_path / "J.jsonl"
    judged.write_text("".join(json.dumps({"id": r["id"], "ack": r["judge_ack"], "example_id": r["example_id"]}) + "\n"
                              for r in rows))
    args = ["judge", "estimate", "--judged", str(judged), "--labels", str(folder / "sample_labelled.jsonl"), "--json"]
    assert main(args) == 0
    got = capsys.readouterr()
    assert json.loads(got.out)["n_labelled"] == 11 and "stratified estimator" in json.loads(got.out)["method"]
    assert "warning" not in got.err
    stale = [r | {"judge_id": "keyword:0000000000000000"} for r in rows]
    (folder / "sample.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stale))
    assert main(args) == 0
    assert "was sampled under judge keyword:0000000000000000; the judge is now keyword:" in capsys.readouterr().err


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


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make test` installs Debian's chromium when run as root with apt)")
def test_chromium_clicks_downloads_and_estimates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The page as a labeller meets it: click a choice on every row (one "unsure"), press the
    # download button, and feed what it downloads to `alignment judge estimate`. The harness page
    # is the sample page plus a script that clicks, and that catches the download's blob into the
    # DOM, since a headless browser that dumps its DOM saves no file.
    run = _fake_run(tmp_path / "run")
    assert main(["judge", "sample", str(run), "--design", "uniform", "--n", "10"]) == 0
    capsys.readouterr()
    folder = run / "judge_sample"
    page = (folder / "sample.html").read_text()
    clicker = """<script>
URL.createObjectURL = blob => { blob.text().then(t => { const p = document.createElement("pre");
  p.id = "download"; p.textContent = t; document.body.appendChild(p); }); return "#"; };
HTMLAnchorElement.prototype.click = function () {};  // the saved file is caught above
document.querySelectorAll('tr[data-row]').forEach((tr, k) => {
  tr.querySelector('input[value="' + (k === 0 ? "unsure" : k % 2 ? "true" : "false") + '"]').click(); });
document.querySelector("button").click();
</script></body>"""
    harness = folder / "harness.html"
    harness.write_text(page.replace("</body>", clicker, 1))
    dom = _browser(harness, tmp_path / "profile")
    assert 'id="progress">10 of 10<' in dom
    text = html.unescape(re.search(r'<pre id="download">(.*?)</pre>', dom, flags=re.S).group(1))
    download = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert len(download) == 10 and all(set(d) == {"label_id", "ack_label", "unsure"} for d in download)
    assert sum(d["unsure"] for d in download) == 1 and sum(d["ack_label"] is None for d in download) == 1
    (folder / "sample_labelled.jsonl").write_text(text)
    rows = _rows(folder)
    judged = tmp_path / "J.jsonl"
    judged.write_text("".join(json.dumps({"id": r["id"], "ack": r["judge_ack"]}) + "\n" for r in rows))
    assert main(["judge", "estimate", "--judged", str(judged), "--labels", str(folder / "sample_labelled.jsonl"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_labelled"] == 9
