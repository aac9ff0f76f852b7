"""The whole Method A slice on tiny random models: build → ... → report, with receipts on."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import yaml

from alignment.cli import main


def test_full_run_with_receipts(tmp_path: Path, tiny_llama_dir: Path) -> None:
    cfg = {
        "name": "tiny",
        "task": {"name": "mathbook", "source": "synthetic", "n_examples": 2},
        "generation": {"model": str(tiny_llama_dir), "n_samples": 2, "max_new_tokens": 6, "batch_size": 8},
        "attribution": {"receipts": True},
        "reward": {"backend": "judge", "model": str(tiny_llama_dir), "max_length": 2048},
        "judge": {"name": "keyword"},
        "bon": {"ns": [1, 2]},
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    for stage in ("build", "generate", "receipts", "attribute", "score", "ack", "bon", "report"):
        assert (out / stage / "manifest.json").is_file(), stage
    attrib = pd.read_parquet(out / "attribute" / "data.parquet")
    assert "receipt" in attrib.columns
    # A list column: each receipt is a list of accounts, each a list of source names.
    assert all(all(all(isinstance(n, str) for n in a) for a in r) for r in attrib["receipt"])
    scores = pd.read_parquet(out / "score" / "data.parquet")
    assert {"rm", "rm_d", "rm_c", "rm_d_expected", "rm_c_expected", "rm_receipt"} <= set(scores.columns)
    bon = pd.read_csv(out / "bon" / "bon.csv")
    assert set(bon["N"]) == {1, 2} and "rm_receipt" in set(bon["reward"])
    report = (out / "report.md").read_text()
    assert "![best-of-N](bon/bon.png)" in report and (out / "bon" / "bon.png").is_file()
    # A second run skips every stage.
    mtime = (out / "score" / "manifest.json").stat().st_mtime
    assert main(["run", str(path), "--out", str(out), "--quiet"]) == 0
    assert (out / "score" / "manifest.json").stat().st_mtime == mtime
