"""The project's own offline arithmetic word problems (five options, a worked solution).

Used by `alignment build` when `task.source: synthetic` (the embedded default). Each family
draws its numbers from a seeded RNG so the same seed gives the same problems; the split name is
part of the seed, so train and test problems differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from alignment.tasks.base import LETTERS

Problem = tuple[str, int, str]  # question, answer value, worked solution (without the answer line)

NAMES = ["Asha", "Bruno", "Chen", "Dara", "Elif", "Femi", "Gita", "Hugo", "Ines", "Jonah"]
ITEMS = ["notebooks", "pencils", "mugs", "lamps", "tickets", "plants", "towels", "batteries"]


def _price(r: random.Random) -> Problem:
    item, each, n, paid = r.choice(ITEMS), r.randint(3, 19), r.randint(4, 16), 0
    paid = (each * n // 50 + 1) * 50
    q = f"{r.choice(NAMES)} buys {n} {item} at ${each} each and pays with ${paid}. How much change, in dollars, is returned?"
    s = f"The {item} cost {n} x {each} = {n * each} dollars. The change is {paid} - {n * each} = {paid - n * each} dollars."
    return q, paid - n * each, s


def _speed(r: random.Random) -> Problem:
    v1, v2, t = r.randint(30, 70), r.randint(40, 90), r.randint(2, 6)
    q = (
        f"Two trains leave the same station at the same time in opposite directions, one at "
        f"{v1} km/h and the other at {v2} km/h. How many kilometres apart are they after {t} hours?"
    )
    s = f"They separate at {v1} + {v2} = {v1 + v2} km/h, so after {t} hours they are {v1 + v2} x {t} = {(v1 + v2) * t} km apart."
    return q, (v1 + v2) * t, s


def _discount(r: random.Random) -> Problem:
    price, pct = r.randint(4, 30) * 20, r.choice([10, 15, 20, 25, 30, 35, 40, 45])
    off = price * pct // 100
    q = f"A jacket priced at ${price} is sold at a {pct}% discount. What is the sale price in dollars?"
    s = f"The discount is {pct}% of {price} = {off} dollars, so the sale price is {price} - {off} = {price - off} dollars."
    return q, price - off, s


def _ages(r: random.Random) -> Problem:
    a, b = r.sample(NAMES, 2)
    young, gap, years = r.randint(5, 30), r.randint(2, 12), r.randint(3, 10)
    total = 2 * young + gap + 2 * years
    q = f"{a} is {gap} years older than {b}. In {years} years the sum of their ages will be {total}. How old is {b} now?"
    s = (
        f"Let {b} be x years old, so {a} is x + {gap}. In {years} years: (x + {years}) + (x + {gap} + {years}) = {total}, "
        f"so 2x + {gap + 2 * years} = {total}, 2x = {total - gap - 2 * years} and x = {young}."
    )
    return q, young, s


def _work(r: random.Random) -> Problem:
    m1, d1 = r.randint(3, 12), r.randint(4, 15)
    total = m1 * d1
    m2 = r.choice([k for k in range(2, 31) if total % k == 0 and k != m1] or [m1])
    q = f"{m1} workers can paint a fence in {d1} days. Working at the same rate, how many days would {m2} workers need?"
    s = f"The job takes {m1} x {d1} = {total} worker-days, so {m2} workers need {total} / {m2} = {total // m2} days."
    return q, total // m2, s


def _ratio(r: random.Random) -> Problem:
    a, b, k = r.randint(2, 7), r.randint(2, 9), r.randint(3, 12)
    q = f"In a club the ratio of boys to girls is {a}:{b}. There are {(a + b) * k} members. How many girls are there?"
    s = f"There are {a} + {b} = {a + b} parts, each part is {(a + b) * k} / {a + b} = {k} members, so there are {b} x {k} = {b * k} girls."
    return q, b * k, s


def _interest(r: random.Random) -> Problem:
    p, rate, t = r.randint(2, 20) * 100, r.choice([2, 3, 4, 5, 6, 8, 10]), r.randint(2, 6)
    i = p * rate * t // 100
    q = f"What is the simple interest, in dollars, on ${p} at {rate}% per year for {t} years?"
    s = f"Simple interest is {p} x {rate} x {t} / 100 = {i} dollars."
    return q, i, s


def _area(r: random.Random) -> Problem:
    w, extra = r.randint(3, 20), r.randint(2, 15)
    length = w + extra
    per = 2 * (w + length)
    q = f"A rectangle is {extra} m longer than it is wide and its perimeter is {per} m. What is its area in square metres?"
    s = (
        f"With width w, 2(w + w + {extra}) = {per}, so 2w + {extra} = {per // 2} and w = {w}. "
        f"The length is {length} and the area is {w} x {length} = {w * length}."
    )
    return q, w * length, s


FAMILIES: dict[str, Callable[[random.Random], Problem]] = {
    "price": _price,
    "speed": _speed,
    "discount": _discount,
    "ages": _ages,
    "work": _work,
    "ratio": _ratio,
    "interest": _interest,
    "area": _area,
}


def _distractors(value: int, r: random.Random) -> list[int]:
    """Four distinct wrong options near the answer (typical slips: off by a step, doubled, halved)."""
    cands = {value + d for d in (-10, -5, -4, -2, -1, 1, 2, 3, 5, 10)}
    cands |= {value * 2, value // 2 if value > 3 else value + 7, value + value // 10 + 1}
    cands = sorted(c for c in cands if c > 0 and c != value)
    return r.sample(cands, 4)


def synthetic_problems(split: str, n: int, seed: int) -> list[dict[str, Any]]:
    r = random.Random(f"synthetic-math/{seed}/{split}")
    names = sorted(FAMILIES)
    problems = []
    for i in range(n):
        family = names[i % len(names)]
        question, value, solution = FAMILIES[family](r)
        values = [value, *_distractors(value, r)]
        r.shuffle(values)
        answer = values.index(value)
        problems.append(
            {
                "uid": f"synth-{split}-{i:05d}",
                "question": question,
                "options": [str(v) for v in values],
                "rationale": f"{solution} Answer: ({LETTERS[answer]})",
                "answer": answer,
                "category": family,
            }
        )
    return problems
