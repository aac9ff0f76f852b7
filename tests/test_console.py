"""The quiet console: trainer dictionaries and library warnings go to the run's log file."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
import torch

from alignment.runtime.console import detail, quiet_trainer, run_log, stage_line


def test_details_and_warnings_go_to_the_log(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with run_log(tmp_path) as path:
        stage_line("[x] done")
        detail("[x] a detail")
        warnings.warn("a library FutureWarning", FutureWarning, stacklevel=1)
        logging.getLogger("transformers.modeling_utils").warning("a transformers warning")
    out = capsys.readouterr()
    assert out.out == "[x] done\n" and "warning" not in out.err.lower()
    log = path.read_text()
    assert path.parent == tmp_path / "logs"
    for text in ("[x] done", "[x] a detail", "a library FutureWarning", "a transformers warning"):
        assert text in log


def test_verbose_shows_the_log_live(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with run_log(tmp_path, verbose=True):
        detail("[x] a detail")
    assert "[x] a detail" in capsys.readouterr().err


def test_trainer_logs_leave_the_console(tmp_path: Path, tiny_llama_dir: Path, capsys: pytest.CaptureFixture) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    ids = torch.arange(8).tolist()
    data = Dataset.from_list([{"input_ids": ids, "labels": ids}] * 4)
    # disable_tqdm=True is what printed raw `{'loss': ...}` dicts (transformers' PrinterCallback).
    args = TrainingArguments(str(tmp_path / "t"), max_steps=2, logging_steps=1, report_to="none", use_cpu=True,
                             disable_tqdm=True, per_device_train_batch_size=2, save_strategy="no")
    with run_log(tmp_path) as path:
        quiet_trainer(Trainer(model=model, args=args, train_dataset=data)).train()
    out = capsys.readouterr()
    assert "'loss'" not in out.out and "'loss'" not in out.err
    assert "2/2" in out.err  # the one step bar
    assert "trainer step 1" in path.read_text() and "'loss'" in path.read_text()
