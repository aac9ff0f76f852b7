"""Compiled patterns with an exact literal prefilter, for the keyword judge's many long alternations.

`alignment judge --task NAME ...` (keyword judge) runs a few dozen case-insensitive patterns
on every clause of a response. Python's regex engine tries such a pattern at every position of
the text, because a pattern that opens with `\\b(?:...)` or is case-insensitive gives it no
literal to skip ahead to; on a 5 MB response that was most of a minute. Most clauses hold none
of a pattern's words, so `compile` reads the pattern once and derives *required literals*:
strings such that every match contains at least one of them (`required_literals`). A search on
a text that contains none of them (a plain substring test on the lower-cased text) cannot match
and returns at once; otherwise the real pattern runs. The answer is always the real pattern's:
the prefilter only skips searches that must fail.

The substring test is exact only where lower-casing is how the engine folds case: Python's
case-insensitive matching also lets four non-ASCII letters (U+0130, U+0131, U+017F, U+212A) match
ASCII `i`, `s` and `k`, so a text holding one of them always runs the real pattern.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from itertools import product
from typing import Any

_Lits = frozenset[str]
# Non-ASCII letters that a case-insensitive pattern matches to an ASCII letter (Python's `re` docs).
_FOLDS_TO_ASCII = re.compile("[\u0130\u0131\u017f\u212a]")
_MAX_CLASS = 4  # a character class of up to this many plain characters is expanded ("m[ae]n")
_MAX_RUN_VARIANTS = 16

# What this module reads of `re`'s private parser. They are not a public API: if a Python
# release moves or renames any, the prefilter switches itself off and every pattern is a plain
# `re` pattern (same answers, the engine's own speed) instead of failing at import.
_NEEDED = ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT", "LITERAL", "NOT_LITERAL", "IN", "RANGE", "AT",
           "AT_BEGINNING", "SUBPATTERN", "ATOMIC_GROUP", "BRANCH", "ASSERT", "ASSERT_NOT", "GROUPREF_EXISTS")


def _private_re() -> tuple[Any, Any]:
    """`re`'s private constants and parser modules, or (None, None) when their shape changed."""
    try:
        from re import _constants as constants  # type: ignore[attr-defined]
        from re import _parser as parser  # type: ignore[attr-defined]
    except ImportError:
        return None, None
    if not callable(getattr(parser, "parse", None)) or not all(hasattr(constants, k) for k in _NEEDED):
        return None, None
    return constants, parser


sre_c, sre_parse = _private_re()
PREFILTER = sre_c is not None  # False: plain `re` everywhere (see `_private_re`)
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT) if PREFILTER else ()
# A parse tree of a shape this module does not expect (a changed `re`) fails in one of these.
_SHAPE_ERRORS = (AttributeError, TypeError, ValueError, IndexError, KeyError)


def _plain(code: int) -> bool:
    """A character that lower-casing folds as the engine does: ASCII, or without case ("\u2019")."""
    c = chr(code)
    return code < 128 or (not c.isalpha() and c.lower() == c.upper() == c)


def _class_chars(items: list) -> list[str] | None:
    """The characters of a small class of plain characters (`[ae]`), else None."""
    chars = [chr(av) for op, av in items if op is sre_c.LITERAL and _plain(av)]
    return chars if len(chars) == len(items) and len(chars) <= _MAX_CLASS else None


def _better(a: _Lits | None, b: _Lits | None) -> _Lits | None:
    """The more selective of two required sets: longer shortest literal, then fewer literals."""
    if a is None or b is None:
        return a if b is None else b
    return a if (min(map(len, a)), -len(a)) >= (min(map(len, b)), -len(b)) else b


def _required(seq: Any) -> _Lits | None:
    """Literals (lower case) one of which every match of the parsed sequence `seq` contains."""
    best: _Lits | None = None
    run = [""]  # variants of the literal run being read; adjacent in every match

    def close() -> None:
        nonlocal best, run
        if run != [""]:
            best = _better(best, frozenset(run))
        run = [""]

    for op, av in seq:
        if op is sre_c.LITERAL and _plain(av):
            run = [r + chr(av).lower() for r in run]
            continue
        chars = _class_chars(av) if op is sre_c.IN else None
        if chars and len(run) * len(chars) <= _MAX_RUN_VARIANTS:
            run = [r + c.lower() for r, c in product(run, chars)]
            continue
        if op is sre_c.AT:  # zero width: the literals around it are still adjacent
            continue
        close()
        if op is sre_c.SUBPATTERN:
            best = _better(best, _required(av[3]))
        elif op is sre_c.ATOMIC_GROUP:
            best = _better(best, _required(av))
        elif op is sre_c.BRANCH:
            alts = [_required(alt) for alt in av[1]]
            if all(a is not None for a in alts):
                best = _better(best, frozenset().union(*alts))
        elif op in _REPEATS and av[0] >= 1:
            best = _better(best, _required(av[2]))
    close()
    return best


def required_literals(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """Lower-case strings one of which every match of `pattern` contains; None if none found.
    Literals that contain another are dropped (the shorter one is the test).

    >>> sorted(required_literals(r"\\b(?:wom[ae]n|m[ae]n)\\b"))
    ['man', 'men']
    >>> sorted(required_literals(r"\\bbooks?\\b|(?-i:SOLUTIONS)|answer\\s+key", re.I))
    ['answer', 'book', 'solutions']
    >>> sorted(required_literals(r"\\w+ly|n't|n\u2019t"))
    ['ly', "n't", 'n\u2019t']
    >>> required_literals(r"\\w+\\d") is None
    True
    """
    if not PREFILTER:
        return None
    try:
        lits = _required(sre_parse.parse(pattern, flags))
    except _SHAPE_ERRORS:
        return None
    if not lits or "" in lits:
        return None
    return frozenset(x for x in lits if not any(y != x and y in x for y in lits))


def _pure_literals(pattern: str, flags: int) -> bool:
    """Whether the pattern is only an alternation of plain literal strings (`book|page|text`):
    then it matches exactly when the text contains one of its required literals."""
    tree = sre_parse.parse(pattern, flags)
    alts = tree[0][1][1] if len(tree) == 1 and tree[0][0] is sre_c.BRANCH else [tree]
    return all(all(op is sre_c.LITERAL and _plain(av) for op, av in alt) for alt in alts)


class _View:
    """One text as the prefilter reads it: lower-cased, or None where lower-casing is not how
    the engine folds case."""

    __slots__ = ("low",)

    def __init__(self, text: str) -> None:
        self.low = text.lower() if text.isascii() or not _FOLDS_TO_ASCII.search(text) else None

    def has(self, lits: tuple[str, ...]) -> bool:
        """Whether the text contains one of `lits` (needs `low`)."""
        return any(map(self.low.__contains__, lits))  # type: ignore[union-attr]


# Recent texts: each clause is read by every pattern of the lexicon, and again as the clause
# before the next one.
_views: dict[str, _View] = {}


def _view(text: str) -> _View:
    seen = _views.get(text)
    if seen is None:
        if len(_views) > 64:
            _views.clear()
        seen = _views[text] = _View(text)
    return seen


def _lowered(text: str) -> str | None:
    """`text` lower-cased, or None where lower-casing is not how the engine folds case."""
    return _view(text).low


_GLOBAL_FLAGS = re.compile(r"\(\?[aiLmsux]+\)")


def _structure(pattern: str) -> Iterator[tuple[int, str, int]]:
    """(position, character, depth) of each character outside escapes and classes, for the
    characters that build structure: "(", ")" and "|" (depth counted before the character)."""
    depth, i = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a class: skip to its end ("]" right after "[" or "[^" is a member)
            i += 2 if pattern[i + 1 : i + 2] == "^" else 1
            i += 1 if pattern[i : i + 1] == "]" else 0
            while i < len(pattern) and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c in "()|":
            yield i, c, depth
            depth += {"(": 1, ")": -1, "|": 0}[c]
        i += 1


def top_alternatives(pattern: str) -> list[str]:
    """The pattern's top-level alternatives, as pattern strings.

    >>> top_alternatives(r"a(?:b|c)|[|(]d|\\|e")
    ['a(?:b|c)', '[|(]d', '\\\\|e']
    """
    parts, start = [], 0
    for i, c, depth in _structure(pattern):
        if c == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return parts + [pattern[start:]]


_WRAPPED = re.compile(r"((?:\\b)*)\(\?:(.*)\)((?:\\b)*)", re.S)


def alternatives(pattern: str) -> list[str]:
    """Top-level alternatives; a single group of alternatives between word boundaries is taken
    apart (`\\b(?:a|b)\\b` finds what `\\ba\\b|\\bb\\b` finds: a boundary matches one way only).

    >>> alternatives(r"\\b(?:men|women)\\b"), alternatives(r"\\b(?:a)(?:b)\\b")
    (['\\\\b(?:men)\\\\b', '\\\\b(?:women)\\\\b'], ['\\\\b(?:a)(?:b)\\\\b'])
    """
    parts = top_alternatives(pattern)
    m = _WRAPPED.fullmatch(pattern) if len(parts) == 1 else None
    if not m or any(d < 0 or (c == ")" and d == 0) for _, c, d in _structure(m.group(2))):
        return parts  # no single group: its "(" closes before the end
    inner = top_alternatives(m.group(2))
    return [f"{m.group(1)}(?:{alt}){m.group(3)}" for alt in inner] if len(inner) > 1 else parts


_MAX_REDUCED = 256  # cut-down patterns kept per pattern


class Pattern:
    """A compiled pattern whose methods skip texts that contain none of its required literals.
    Same methods and results as `re.Pattern` for the ones the judge uses."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.regex = re.compile(pattern, flags)
        self.pattern, self.flags = self.regex.pattern, self.regex.flags
        self._alts: list[tuple[str, tuple[str, ...] | None]] = []
        try:
            self._analyse(pattern, flags)
        except _SHAPE_ERRORS:  # a parse tree of another shape: no prefilter for this pattern
            self._lits, self._exact, self._alts = None, False, []
        self._reduced: dict[tuple[int, ...], re.Pattern[str]] = {}
        # The last search: the lexicon reads a clause with the same pattern several times (as the
        # clause, as the clause before the next one, inside helpers).
        self._memo: tuple[str | None, int, re.Match[str] | None] = (None, 0, None)
        if self._lits is None:  # nothing to test first: the pattern's own methods, at their speed
            self.search, self.match, self.finditer = self.regex.search, self.regex.match, self.regex.finditer  # type: ignore[method-assign]
            self.sub, self.split = self.regex.sub, self.regex.split  # type: ignore[method-assign]

    def _analyse(self, pattern: str, flags: int) -> None:
        """The required literals, and each top-level alternative's."""
        if not PREFILTER:
            self._lits, self._exact = None, False
            return
        # A pattern anchored at the start is tried at one position only: no test is cheaper.
        tree = sre_parse.parse(pattern, flags)
        anchored = bool(tree) and tree[0] == (sre_c.AT, sre_c.AT_BEGINNING)
        lits = None if anchored else required_literals(pattern, flags)
        self._lits = tuple(sorted(lits)) if lits else None
        self._exact = bool(self._lits) and bool(self.flags & re.I) and _pure_literals(pattern, flags)
        # A text runs only the top-level alternatives whose own literals it contains: an
        # alternative that cannot match anywhere in the text changes no match of the pattern, so
        # the pattern without it finds the same matches. (Only without groups, whose numbers
        # would change, and without global inline flags.)
        alts = alternatives(pattern) if self.regex.groups == 0 and not _GLOBAL_FLAGS.search(pattern) else []
        if self._lits is not None and len(alts) > 1:
            for alt in alts:
                own = required_literals(alt, flags)
                self._alts.append((alt, tuple(sorted(own)) if own else None))

    def _runner(self, text: str) -> re.Pattern[str] | None:
        """The regex to run on `text`: None where no match is possible, else the pattern, or
        the pattern cut down to the alternatives that the text's literals allow."""
        low = (_views.get(text) or _view(text)).low
        if low is None or self._lits is None:
            return self.regex
        has = low.__contains__
        if not any(map(has, self._lits)):  # the usual answer, and one pass over few literals
            return None
        if not self._alts:
            return self.regex
        keep = tuple(i for i, (_, lits) in enumerate(self._alts) if lits is None or any(map(has, lits)))
        if len(keep) == len(self._alts):
            return self.regex
        reduced = self._reduced.get(keep)
        if reduced is None:
            if len(self._reduced) >= _MAX_REDUCED:  # an adversarial text could ask for every subset
                return self.regex
            reduced = self._reduced[keep] = re.compile("|".join(self._alts[i][0] for i in keep), self.flags)
        return reduced

    def possible(self, text: str) -> bool:
        """False only where the pattern cannot match `text`."""
        if self._lits is None:
            return True
        view = _view(text)
        return view.low is None or view.has(self._lits)  # type: ignore[arg-type]

    def contains(self, text: str) -> bool:
        """Whether the pattern matches somewhere in `text` (`bool(search(text))`)."""
        if self._exact and _lowered(text) is not None:
            return self.possible(text)
        return self.search(text) is not None

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        """`re.Pattern.search` (the match object may come from the cut-down pattern)."""
        seen, at, m = self._memo
        if seen is text and at == pos:
            return m
        regex = self._runner(text)
        m = regex.search(text, pos) if regex is not None else None
        self._memo = (text, pos, m)
        return m

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        regex = self._runner(text)
        return regex.match(text, pos) if regex is not None else None

    def finditer(self, text: str, pos: int = 0) -> Iterator[re.Match[str]]:
        regex = self._runner(text)
        return regex.finditer(text, pos) if regex is not None else iter(())

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        regex = self._runner(text)
        return regex.sub(repl, text, count) if regex is not None else text

    def split(self, text: str) -> list[str]:
        regex = self._runner(text)
        return regex.split(text) if regex is not None else [text]


class AnyOf:
    """The literal test of a group of patterns: `possible` is False only where none of them can
    match (a cheap guard before a rule that needs one of them)."""

    def __init__(self, *patterns: Pattern) -> None:
        self._always = any(p._lits is None for p in patterns)
        self._lits = tuple(sorted({w for p in patterns for w in p._lits or ()}))

    def possible(self, text: str) -> bool:
        if self._always:
            return True
        view = _view(text)
        return view.low is None or view.has(self._lits)  # type: ignore[arg-type]


def _children(op: object, av: object) -> list:
    """The sub-sequences of one parsed element (groups, alternatives, repeats, look-arounds)."""
    if op is sre_c.SUBPATTERN:
        return [av[3]]  # type: ignore[index]
    if op is sre_c.BRANCH:
        return list(av[1])  # type: ignore[index]
    if op in _REPEATS:
        return [av[2]]  # type: ignore[index]
    if op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
        return [av[1]]  # type: ignore[index]
    return [av] if op is sre_c.ATOMIC_GROUP else []


def _digit_blind(seq: Any) -> bool:
    for op, av in seq:
        if op in (sre_c.LITERAL, sre_c.NOT_LITERAL) and chr(av).isdigit():
            return False
        if (op is sre_c.IN and not _class_digit_blind(av)) or op is sre_c.GROUPREF_EXISTS:
            return False
        if not all(_digit_blind(x) for x in _children(op, av)):
            return False
    return True


def _class_digit_blind(items: list) -> bool:
    """A class holds all ASCII digits or none of them (ranges and single digits decide)."""
    held = set()
    for op, av in items:
        if op is sre_c.LITERAL and chr(av).isdigit():
            return False
        if op is sre_c.RANGE:
            held.add(tuple(av[0] <= d <= av[1] for d in range(48, 58)))
    return all(len(set(h)) == 1 for h in held)


def digit_blind(pattern: str, flags: int = 0) -> bool:
    """Whether `pattern` treats every ASCII digit alike (no digit literal, no class or range that
    holds some digits but not others): then replacing each digit of a text by another changes no
    match but the digits inside it.

    >>> digit_blind(r"step\\s*\\d+|[0-9@$]+|[A-Za-z0-9]"), digit_blind(r"m2"), digit_blind(r"[1-9]")
    (True, False, False)
    """
    if not PREFILTER:
        return False
    try:
        return _digit_blind(sre_parse.parse(pattern, flags))
    except _SHAPE_ERRORS:
        return False


def compile(pattern: str, flags: int = 0) -> Pattern:  # noqa: A001 - mirrors re.compile
    """`re.compile` with the literal prefilter (module docstring)."""
    return Pattern(pattern, flags)
