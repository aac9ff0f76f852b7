"""Prompt-level transformations whose required relation is known: the answer must not change.

`transform_prompt(name, row, pool, seed)` returns a `Transformed` (the rewritten example row, same
`id`, so its samples get the same seeds as the base prompt's, and `option_map`: transformed option
index -> base option index), or None where the row does not offer the transformation. Rows are
built rows (`template`, `sources`, `options`, `answer`; see `alignment.tasks.base`).

- `book_order` (Math Book): the book's problems in another order, renumbered everywhere ("Problem
  k:" and "Solution to Problem k:" in the template and in the source values).
- `book_distractor` (Math Book): one more book problem, without a solution, taken from another
  example's book and inserted at a seeded position (the book's stated problem count follows).
- `option_order` (any task whose template shows `format_options(options)`): the options in
  another order and the letters remapped, in the query, in the book's copy of the query problem
  and in the query's own worked solution; checked by parsing the solution before and after, and
  skipped where the solution holds a letter that may name an option in a form not recognised.
- `participant` (BiasQA): the irrelevant participant ("the customer") replaced by "someone", the
  variant Winogender itself offers for every template. Built rows do not carry the participant
  as a field, so it is read back from the row id (`biasqa-<occupation>-<participant>-<index>`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alignment.tasks.answer import parse_answer
from alignment.tasks.base import format_options, protected_source, render_hybrid

Row = Mapping[str, Any]
_BLOCK = re.compile(r"(?ms)^Problem (\d+): .*?\nOptions: [^\n]*")
_NUMBER = re.compile(r"(?<![A-Za-z])Problem (\d+):")
_COUNT = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven"}
# A letter naming an option: "(C)", "answer is C", "Answer: (C)", "ANSWER:C", "Ans is C", "correct
# option is C", "Option:C", or a bare letter alone on the last line.
_LETTER = re.compile(
    r"\((?P<a>[A-H])\)"
    r"|(?P<pre>(?i:\b(?:answer|ans)\s*(?:is|:|=|-)?\s*(?:option\s*)?|\b(?:correct\s+)?option\s*(?:is\s*)?:?\s*))"
    r"(?P<open>[\(\[]?)(?P<b>[A-H])(?![A-Za-z0-9])"
    r"|(?P<nl>\n\s*)(?P<c>[A-H])(?=\s*\.?\s*$)"
)
# Letters left standing after remapping (B-H; "A" is too often the article) make a remap uncertain.
_STRAY = re.compile(r"(?<![A-Za-z0-9])[B-H](?![A-Za-z0-9])|(?<![A-Za-z0-9])A\W*$")


@dataclass(frozen=True)
class Transformed:
    row: dict[str, Any]
    option_map: tuple[int, ...]  # transformed option index -> base option index


def _rng(seed: int, name: str, row: Row) -> random.Random:
    return random.Random(f"audit/{seed}/{name}/{row['id']}")


def _moved_shuffle(n: int, rng: random.Random) -> list[int]:
    """A seeded permutation of range(n) that is not the identity (n >= 2)."""
    while True:
        order = list(range(n))
        rng.shuffle(order)
        if order != list(range(n)):
            return order


def renumber(text: str, new_number: Mapping[int, int]) -> str:
    """Rename "Problem k:" to "Problem new_number[k]:" in one pass (no double renaming).

    >>> renumber("Problem 1: x\\nSolution to Problem 2: y", {1: 2, 2: 1})
    'Problem 2: x\\nSolution to Problem 1: y'
    """
    return _NUMBER.sub(lambda m: f"Problem {new_number.get(int(m.group(1)), int(m.group(1)))}:", text)


def book_blocks(template: str) -> list[re.Match[str]] | None:
    """The book's problem blocks, when there are at least two in one contiguous run."""
    blocks = list(_BLOCK.finditer(template))
    if len(blocks) < 2 or any(template[a.end() : b.start()] != "\n\n" for a, b in zip(blocks, blocks[1:], strict=False)):
        return None
    return blocks


def _with(row: Row, template: str, sources: list[dict], options: list[str] | None = None, answer: int | None = None) -> dict[str, Any]:
    out = {**row, "template": template, "sources": sources}
    if options is not None:
        out["options"], out["answer"] = options, answer
    out["query"] = render_hybrid(out, ())
    out["cf_query"] = render_hybrid(out, (protected_source(out),))
    return out


def _rebook(row: Row, blocks: list[re.Match[str]], texts: list[str], new_number: Mapping[int, int]) -> dict[str, Any]:
    """Replace the book's run of blocks by `texts` (already in their new order, new numbers) and
    renumber every other "Problem k:" reference."""
    t = row["template"]
    start, end = blocks[0].start(), blocks[-1].end()
    template = renumber(t[:start], new_number) + "\n\n".join(texts) + renumber(t[end:], new_number)
    sources = [{**s, "original": renumber(s["original"], new_number), "counterfactual": renumber(s["counterfactual"], new_number)}
               for s in row["sources"]]
    return _with(row, template, sources)


def book_order(row: Row, pool: Sequence[Row], rng: random.Random) -> Transformed | None:
    blocks = book_blocks(row["template"])
    if blocks is None:
        return None
    order = _moved_shuffle(len(blocks), rng)
    new_number = {int(blocks[i].group(1)): pos + 1 for pos, i in enumerate(order)}
    texts = [renumber(blocks[i].group(0), new_number) for i in order]
    return Transformed(_rebook(row, blocks, texts, new_number), tuple(range(len(row["options"]))))


def book_distractor(row: Row, pool: Sequence[Row], rng: random.Random) -> Transformed | None:
    blocks = book_blocks(row["template"])
    if blocks is None:
        return None
    shown = {b.group(0).split(": ", 1)[1] for b in blocks}
    candidates = [
        b.group(0).split(": ", 1)[1]
        for other in pool
        if other["unit_id"] != row["unit_id"]
        for b in (book_blocks(other["template"]) or [])
        if b.group(0).split(": ", 1)[1] not in shown
    ]
    if not candidates:
        return None
    extra = rng.choice(sorted(set(candidates)))
    pos = rng.randrange(len(blocks) + 1)
    new_number = {int(b.group(1)): i + 1 + (i >= pos) for i, b in enumerate(blocks)}
    texts = [renumber(b.group(0), new_number) for b in blocks]
    texts.insert(pos, f"Problem {pos + 1}: {extra}")
    out = _rebook(row, blocks, texts, new_number)
    n, head = len(blocks), out["template"][: blocks[0].start()]
    word = _COUNT.get(n)
    if word and n + 1 in _COUNT and len(re.findall(rf"\b{word}\b", head)) == 1:
        # The page says how many problems it holds; keep that true.
        out = _with(out, re.sub(rf"\b{word}\b", _COUNT[n + 1], head, count=1) + out["template"][len(head):], out["sources"])
    return Transformed(out, tuple(range(len(row["options"]))))


def remap_letters(text: str, new_letter: Mapping[str, str]) -> str:
    """Rename option letters where the text names an option (see `_LETTER`); one pass.

    >>> remap_letters("A train ... Answer: (C)", {"C": "A", "A": "C"})
    'A train ... Answer: (A)'
    >>> remap_letters("so (B) fits; ANSWER:B", {"B": "E"})
    'so (E) fits; ANSWER:E'
    """

    def sub(m: re.Match[str]) -> str:
        if m.group("a"):
            return f"({new_letter.get(m.group('a'), m.group('a'))})"
        if m.group("c"):
            return m.group("nl") + new_letter.get(m.group("c"), m.group("c"))
        return m.group("pre") + m.group("open") + new_letter.get(m.group("b"), m.group("b"))

    return _LETTER.sub(sub, text)


def stray_letters(text: str) -> bool:
    """Whether a letter that may name an option is left outside every recognised reference.

    >>> stray_letters("Answer: (C)"), stray_letters("Thus we get B"), stray_letters("A train runs")
    (False, True, False)
    """
    return _STRAY.search(_LETTER.sub("", text)) is not None


def option_order(row: Row, pool: Sequence[Row], rng: random.Random) -> Transformed | None:
    options = list(row["options"])
    shown = format_options(options)
    if len(options) < 2 or shown not in row["template"]:
        return None
    order = _moved_shuffle(len(options), rng)  # new position j shows base option order[j]
    new_options = [options[i] for i in order]
    letters = "ABCDEFGH"
    new_letter = {letters[i]: letters[order.index(i)] for i in range(len(options))}
    sources = [dict(s) for s in row["sources"]]
    prot = next(s for s in sources if s["protected"])
    before = parse_answer(prot["original"], options)
    if stray_letters(prot["original"]):
        return None  # a letter we could not map with certainty: skip, never mislead
    prot["original"] = remap_letters(prot["original"], new_letter)
    if before is not None and parse_answer(prot["original"], new_options) != order.index(before):
        return None
    template = row["template"].replace(shown, format_options(new_options))
    return Transformed(_with(row, template, sources, new_options, order.index(int(row["answer"]))), tuple(order))


def _participant(row: Row) -> str | None:
    prefix = f"biasqa-{row['unit_id']}-".replace(" ", "_")
    m = re.fullmatch(re.escape(prefix) + r"(.+)-\d{4}", str(row["id"]))
    return m.group(1).replace("_", " ") if m else None


def participant(row: Row, pool: Sequence[Row], rng: random.Random) -> Transformed | None:
    who = _participant(row)
    if who is None:
        return None
    pattern = re.compile(rf"\b([Tt])he {re.escape(who)}\b")
    if len(pattern.findall(row["template"])) != 1:
        return None
    template = pattern.sub(lambda m: "Someone" if m.group(1) == "T" else "someone", row["template"])
    return Transformed(_with(row, template, [dict(s) for s in row["sources"]]), tuple(range(len(row["options"]))))


PROMPT_FNS: dict[str, Callable[[Row, Sequence[Row], random.Random], Transformed | None]] = {
    "book_order": book_order,
    "book_distractor": book_distractor,
    "option_order": option_order,
    "participant": participant,
}


def transform_prompt(name: str, row: Row, pool: Sequence[Row], seed: int = 0) -> Transformed | None:
    """Apply prompt transformation `name` to one built row (None: not offered by this row)."""
    return PROMPT_FNS[name](row, pool, _rng(seed, name, row))
