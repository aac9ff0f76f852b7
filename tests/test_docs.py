"""The docs are checked like code: the generated config reference is current, every relative link
and anchor in README.md and docs/*.md resolves, and every `alignment SUBCOMMAND` of a shell
example still exists (`alignment SUBCOMMAND --help` exits 0, called in-process)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from alignment.cli.config_reference import reference

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
SHELL_LANGS = {"", "bash", "sh", "shell", "console"}


# ------------------------------------------------------------------------------- the checkers


def prose(text: str) -> str:
    """The page without fenced blocks and inline code, where `[x](y)` and `# x` are no markup."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.

    >>> slug("How long `make run` takes")
    'how-long-make-run-takes'
    >>> slug("Acknowledgment rates that carry the judge's error")
    'acknowledgment-rates-that-carry-the-judges-error'
    """
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a page, with GitHub's -1, -2 suffixes for repeated headings."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """Relative links of `page` whose file, folder or anchor does not exist."""
    problems = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z+.-]*:", target):  # http:, https:, mailto: are not checked offline
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            problems.append(f"{page.name}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{page.name}: {target} (no heading with anchor #{anchor} in {dest.name})")
    return problems


def shell_commands(text: str) -> list[list[str]]:
    """The words after `alignment` in each command of the page's shell blocks: the subcommand,
    and a second word when it looks like a sub-subcommand (`judge validate`), else nothing."""
    found = []
    for lang, body in FENCE.findall(text):
        if lang.strip() not in SHELL_LANGS:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0]
            for command in re.split(r"&&|\|\||;|\|", line):
                words = command.split()
                while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):  # VAR=value prefixes
                    words.pop(0)
                if not words or not re.fullmatch(r"(\S*/)?alignment", words[0]):
                    continue
                rest = [w for w in words[1:3]]
                sub = rest[:1] if rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]) else []
                if sub and len(rest) > 1 and re.fullmatch(r"[a-z][a-z-]*", rest[1]):
                    sub.append(rest[1])
                if sub:
                    found.append(sub)
    return found


def help_exit_code(words: list[str]) -> int:
    from alignment.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return main([*words, "--help"])
        except SystemExit as e:
            return int(e.code or 0) if isinstance(e.code, int) or e.code is None else 2


# ---------------------------------------------------------------------------------- the pages


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


def test_every_relative_link_and_anchor_resolves() -> None:
    assert len(PAGES) > 5, "README.md and docs/*.md"
    problems = [p for page in PAGES for p in broken_links(page)]
    assert not problems, "\n".join(problems)


def test_every_shell_example_names_a_command_that_exists() -> None:
    commands = {tuple(c) for page in PAGES for c in shell_commands(page.read_text())}
    assert ("run",) in {c[:1] for c in commands}, "the README's quick start and docs run `alignment run`"
    missing = [" ".join(c) for c in sorted(commands) if help_exit_code(list(c)) != 0]
    assert not missing, f"`alignment X --help` fails for: {missing}"


def test_the_readme_is_a_front_page() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make run" in text and "make test" in text


# ------------------------------------------------------------------ the checkers can fail


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## Real section\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#real-section) [gone](missing.md) [bad](a.md#nowhere) [self](#title-here)\n"
                    "`[code](not-a-link.md)`\n\n```bash\n# not a heading\n```\n## Title here\n")
    assert broken_links(page) == ["b.md: missing.md (no such file)",
                                  "b.md: a.md#nowhere (no heading with anchor #nowhere in a.md)"]


def test_a_removed_subcommand_is_caught() -> None:
    text = ("```bash\nFOO=1 alignment judge validate --task T  # comment\n"
            ".venv-gpu/bin/alignment run configs/x.yaml \\\n    --set a=1\nmake run\n"
            "alignment no-such-command CONFIG\n```\n```python\nalignment = 1\n```\n")
    assert shell_commands(text) == [["judge", "validate"], ["run"], ["no-such-command"]]
    assert help_exit_code(["judge", "validate"]) == 0
    assert help_exit_code(["no-such-command"]) == 2


@pytest.mark.parametrize("page", [p.name for p in PAGES])
def test_every_page_has_a_title(page: str) -> None:
    path = REPO / page if page == "README.md" else REPO / "docs" / page
    assert path.read_text().startswith("# ")


# ------------------------------------------------------------------------- alignment --help


def test_the_help_lists_the_commands_in_pipeline_order_one_line_each(monkeypatch: pytest.MonkeyPatch) -> None:
    from alignment.cli import main
    from alignment.runner import STAGE_NAMES

    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["--help"]) == 0
    listing = out.getvalue().split("  COMMAND\n", 1)[1].split("\n\n", 1)[0].splitlines()
    names = [re.match(r" {4}(\S+) {2,}\S", line) for line in listing]
    assert all(names), f"a command without its help on the same line: {listing}"
    assert [m.group(1) for m in names if m] == ["config", "organism", "run", *STAGE_NAMES,
                                                "status", "judge", "compare", "sweep", "results", "reasonbench", "bench"]
