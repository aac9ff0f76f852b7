"""The docs are checked like code: the generated config reference is current, every relative link
and anchor in README.md and docs/*.md resolves, every command of a shell example runs in a dry or
`--help` form from a clone (and every repository path it names exists), and the pages describe
the current state (no issue numbers, commit hashes or "attempt" narration: that is CHANGELOG.md)."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import shlex
import subprocess
import sys
import tomllib
import warnings
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

def section(text: str, title: str) -> str:
    """The body of the `## title` section of a page (up to the next heading of level 2 or 1)."""
    match = re.search(rf"^## {re.escape(title)}\s*\n(.*?)(?=^#{{1,2}} |\Z)", FENCE.sub("", text), re.S | re.M)
    return match.group(1) if match else ""


# History belongs in CHANGELOG.md: an issue number, a commit hash in backticks, "attempt" narration.
HISTORY = [
    (re.compile(r"(?<![\w&/])#\d+\b"), "an issue number"),
    (re.compile(r"`(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}`"), "a commit hash"),
    (re.compile(r"\bgit show\b"), "a pointer into git history"),
    (re.compile(r"\battempt(s|ed)?\b", re.I), "'attempt' narration"),
    (re.compile(r"\bnot adopted\b|\brounds? \d", re.I), "narration of what was tried"),
]


def history(text: str) -> list[str]:
    """What in a page narrates history instead of stating the current state."""
    return [f"{what}: {m.group(0)!r}" for pattern, what in HISTORY for m in pattern.finditer(text)]


def commands(text: str) -> list[list[str]]:
    """Every command of the page's shell blocks as words (continuation lines joined, comments,
    `VAR=value` prefixes and `[optional ...]` usage brackets removed; `a && b`, `a | b` split)."""
    found = []
    for lang, body in FENCE.findall(text):
        if lang.strip() not in SHELL_LANGS:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*", "", line)
            for command in re.split(r"&&|\|\||;|\s\|\s", line):
                try:
                    words = shlex.split(re.sub(r"(?<!\S)\[|\](?!\S)", " ", command))
                except ValueError:
                    words = command.split()
                while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", words[0]):
                    words.pop(0)
                if words:
                    found.append(words)
    return found


ROOTS = {p.name for p in REPO.iterdir() if not p.name.startswith(".")} - {"runs", "data"}


def repo_paths(words: list[str]) -> list[str]:
    """The words that name a path inside the repository (its first folder is a top-level one)."""
    return [w for w in words if "/" in w and w.split("/", 1)[0] in ROOTS]


def extras() -> set[str]:
    return set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])


def module_help_exit_code(module: str) -> int:
    argv = sys.argv
    sys.argv = [module, "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module may be imported already
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except ImportError:
        return 2
    finally:
        sys.argv = argv


def dry_run(words: list[str]) -> str | None:
    """Run one documented command in a dry or `--help` form from the repository root; None when it
    works, else why not. Commands of other tools (ray, sbatch, pip install of a named package)
    are not run; their repository paths are still checked."""
    for w in words:
        if "../" in w:
            return f"{w}: a path outside the repository"
    for w in repo_paths(words):
        if not (REPO / w.rstrip("/")).exists():
            return f"{w}: no such file in the repository"
    head = words[0]
    if re.fullmatch(r"(\S*/)?alignment", head):
        return None if help_exit_code(words[1:]) == 0 else "`--help` of it fails"
    if head == "make":
        done = subprocess.run(["make", "-n", *words[1:]], cwd=REPO, capture_output=True, text=True)
        return None if done.returncode == 0 else f"make -n: {done.stderr.strip()}"
    if re.fullmatch(r"(\S*/)?python(3[.\d]*)?", head) and words[1:2] == ["-m"] and words[2].startswith("alignment"):
        return None if module_help_exit_code(words[2]) == 0 else f"python -m {words[2]} --help fails"
    if re.fullmatch(r"(\S*/)?pip3?", head) or words[:3] in (["python", "-m", "pip"],):
        for w in words:
            extra = re.fullmatch(r"\.\[([\w,-]+)\]", w)
            if extra and not set(extra.group(1).split(",")) <= extras():
                return f"{w}: pyproject.toml has no such extra (it has {sorted(extras())})"
        return None
    script = next((w for w in words[:2] if w.endswith(".sh")), None)
    if script:
        done = subprocess.run(["bash", "-n", str(REPO / script)], capture_output=True, text=True)
        return None if done.returncode == 0 else f"bash -n {script}: {done.stderr.strip()}"
    return None



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
    assert len(text.splitlines()) <= 120, f"README.md has {len(text.splitlines())} lines; at most 120"
    assert "make run" in text and "make test" in text
    results = section(text, "Results")
    assert 0 < len([line for line in results.splitlines() if line.strip()]) <= 10, "the README's results: at most 10 lines"
    assert not re.search(r"\d", LINK.sub("", results)), "the README links results/ pages; it types no figure"
    assert "results/" in results


def test_every_documented_command_runs_from_a_clone() -> None:
    """Each shell command of README.md and docs/ in a dry or `--help` form: `alignment ... --help`,
    `make -n TARGET`, `python -m alignment.X --help`, `bash -n` of a script, the extras a `pip
    install` names; and every repository path it names exists."""
    seen = [(page.name, words) for page in PAGES for words in commands(page.read_text())]
    assert any(w[0] == "make" for _, w in seen) and any(w[0].endswith("alignment") for _, w in seen)
    problems = [f"{name}: {' '.join(words)}: {why}" for name, words in seen if (why := dry_run(words))]
    assert not problems, "\n".join(problems)


def test_no_page_points_outside_the_repository() -> None:
    bad = [f"{page.name}: {m.group(0)}" for page in PAGES for m in re.finditer(r"\.\./shared\S*", page.read_text())]
    assert not bad, f"data comes from its public source or a project command, not a sibling folder: {bad}"


def test_the_pages_state_the_current_state_and_leave_history_to_the_changelog() -> None:
    problems = [f"{page.name}: {p}" for page in PAGES for p in history(page.read_text())]
    assert not problems, "move these to CHANGELOG.md:\n" + "\n".join(problems)
    assert (REPO / "CHANGELOG.md").is_file()


def test_the_docs_index_gives_every_page_one_line() -> None:
    index = (REPO / "docs" / "index.md").read_text()
    linked = {Path(t.partition("#")[0]).name for t in LINK.findall(index)}
    missing = [p.name for p in PAGES if p.parent.name == "docs" and p.name != "index.md" and p.name not in linked]
    assert not missing, f"docs/index.md does not list {missing}"
    for heading in ("## Start", "## Concepts", "## How-to", "## Reference"):
        assert heading in index


def test_the_stage_table_and_the_resume_rules_have_one_home() -> None:
    from alignment.runner import STAGE_NAMES

    # Stages that are never sharded: a table naming two of them is a stage table (cluster.md's shard
    # table names only sharded ones).
    rows = {p.name: len(re.findall(r"^\| `(?:build|attribute|bon|report)` \|", p.read_text(), re.M)) for p in PAGES}
    assert rows.pop("pipeline.md") == 4 and max(rows.values()) < 2, f"the stage table is repeated: {rows}"
    table = section((REPO / "docs" / "pipeline.md").read_text(), "Stages")
    assert re.findall(r"^\| `([a-z-]+)` \|", table, re.M) == list(STAGE_NAMES)
    headings = [p.name for p in PAGES for h in HEADING.findall(FENCE.sub("", p.read_text())) if h.startswith("Resuming")]
    assert headings == ["pipeline.md"] or set(headings) == {"pipeline.md", "cluster.md"}, headings


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


def test_history_is_caught() -> None:
    text = "Fixed in #53 (`67030c9`); see `git show 67030c9:x`. Attempt 2 failed; not adopted in rounds 1-11."
    found = history(text)
    assert [f.split(":")[0] for f in found] == ["an issue number", "a commit hash", "a pointer into git history",
                                               "'attempt' narration", "narration of what was tried",
                                               "narration of what was tried"]
    assert history("report.html#variant=orig&ack=1 `results/bench.md` `0.0` 4,096 tokens, `abcdefg`") == []


def test_a_command_that_cannot_run_from_a_clone_is_caught() -> None:
    text = ("```bash\nalignment run configs/embedded_default.yaml --set a=1  # ok\n"
            "alignment build --task biasqa --data-dir ../shared/data/winogender --out runs/w\n"
            "jobs/no_such_job.sh CONFIG RUN\nmake -q no-such-target\npip install -e '.[no-such-extra]'\n"
            "python -m alignment.no_such_module\nalignment no-such-command\n```\n")
    found = [dry_run(words) for words in commands(text)]
    assert found[0] is None
    assert "outside the repository" in found[1]
    assert "no such file" in found[2]
    assert "make -n" in found[3]
    assert "no such extra" in found[4]
    assert "--help fails" in found[5]
    assert "--help" in found[6]
    assert dry_run(["make", "-n", "run"]) is None and dry_run(["bash", "jobs/gpu_check.sh"]) is None


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
