"""The docs are checked like code: the generated config reference is current."""

from __future__ import annotations

from pathlib import Path

from alignment.config_reference import reference

REPO = Path(__file__).resolve().parents[1]


def test_the_config_reference_is_current() -> None:
    page = (REPO / "docs" / "config.md").read_text()
    assert page == reference(), "docs/config.md is stale: run `alignment config reference > docs/config.md`"


def test_the_config_reference_lists_every_field_with_its_doc() -> None:
    from alignment.config import field_docs
    from alignment.run_config import RunConfig

    page = reference()
    for d in field_docs(RunConfig):
        if not d.section:
            assert f"| `{d.name}` |" in page
            assert d.doc, f"{d.name} has no doc() string"
