"""User-facing errors: one line on stderr, exit code 2 (raised anywhere, caught only by the CLI).

`alignment <anything>` turns a `UserError` into `alignment: error: <message>` and exit status 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """Bad input from the user (config, file, row, flag). The message is shown as one line."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """Return ' (did you mean X?)' for the closest choice, or '' when nothing is close.

    >>> did_you_mean("tempreature", ["temperature", "top_p"])
    " (did you mean 'temperature'?)"
    >>> did_you_mean("zzz", ["temperature"])
    ''
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
