"""A small name → factory registry for the parts users swap: tasks, generators, reward models, judges.

Stages are plain functions, not plugins; only swappable components live here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from alignment.errors import UserError, did_you_mean

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to factories; unknown names raise a `UserError` with a suggestion.

    >>> r = Registry("judge")
    >>> @r.register("keyword")
    ... def make(): return "kw"
    >>> r.get("keyword")()
    'kw'
    >>> r.get("keywrd")
    Traceback (most recent call last):
    ...
    alignment.errors.UserError: unknown judge 'keywrd' (did you mean 'keyword'?); choose from: keyword
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        if name not in self._items:
            raise UserError(
                f"unknown {self.kind} {name!r}{did_you_mean(name, self._items)}; "
                f"choose from: {', '.join(sorted(self._items))}"
            )
        return self._items[name]

    def check(self, name: str, field: str) -> None:
        """Config validation: an unknown name fails as `<field>: unknown ... (did you mean ...)`."""
        try:
            self.get(name)
        except UserError as e:
            raise UserError(f"{field}: {e}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items
