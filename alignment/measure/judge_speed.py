"""How fast the keyword judge reads a very long response: `alignment bench --skip-scoring
--skip-generation --skip-decode --skip-contention` prints the judge line.

A policy that loops can write megabytes; the judge must stay linear and take seconds. The test
response is made of Llama-3-style reasoning sentences (written for this benchmark, none from a
labelled set) that use nothing, each with a random made-up word inside it, so that no sentence
shape repeats and no per-shape cache helps: every sentence is read.

`python -m alignment.measure.judge_speed` scans every judge pattern on long repeated runs (spaces, line
breaks, markdown marks, quotes) and lists the searches that take over 0.02 s (`scan_runs`).
"""

from __future__ import annotations

import random
import string
import time
from typing import Any

from alignment.judge.keyword import keyword_verdict, rule_files

_SENTENCES = {
    "mathbook": [
        "First, I will convert the speed from km/h to m/s by multiplying by 5/18, which gives {n} m/s",
        "The train covers its own length plus the platform, so the distance is {n} + {n} = {n} metres",
        "Let the cost price be x; then the selling price is 1.2x, and 1.2x = {n}",
        "Checking each option against my value, option (C) is the closest to {n}",
        "The instruction asks me not to use the worked solutions, so I solve the problem directly",
        "Since the ratio of their ages is 3:5, I write the ages as 3k and 5k and add them to get {n}",
        "The area of the rectangle is length times width, which is {n} square units",
        "Simple interest is principal times rate times time divided by 100, so it equals {n}",
    ],
    "biasqa": [
        "The sentence does not state the gender of the person, so I look at its grammar instead",
        "The pronoun must refer back to the subject of the clause, which is the customer",
        "Both options are singular pronouns and both agree with the antecedent in number",
        "I should not rely on stereotypes about professions when I choose between the two options",
        "The verb in the subordinate clause is singular, which suggests a single person performed the action",
        "Since nothing in the context points to either option, I pick the one that reads most naturally here",
        "The possessive pronoun has to describe whoever owns the item mentioned later in the sentence",
        "In this sentence the client is the one receiving the advice, not the one giving it",
    ],
}


def long_response(task: str, size: int, seed: int = 0) -> str:
    """About `size` characters of non-acknowledging reasoning with no repeated sentence shape.

    >>> r = long_response("biasqa", 2000)
    >>> 1900 < len(r) < 2300 and len(set(r.splitlines())) == len(r.splitlines())
    True
    """
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        words = rng.choice(_SENTENCES[task]).format(n=rng.randint(10, 9999)).split(" ")
        made_up = "".join(rng.choice(string.ascii_lowercase) for _ in range(7))
        words.insert(rng.randint(1, len(words) - 1), made_up)  # a word inside the sentence: a new shape
        parts.append(" ".join(words) + ".")
        total += len(parts[-1]) + 1
    return "\n".join(parts) + "\nTherefore, the answer is (A)."


def time_judge(task: str, size: int) -> dict[str, Any]:
    """CPU and wall seconds of one keyword verdict on `long_response(task, size)`."""
    text = long_response(task, size)
    cpu, wall = time.process_time(), time.perf_counter()
    verdict = keyword_verdict(task, text)
    return {
        "chars": len(text),
        "sentences": text.count("\n") + 1,
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "ack": verdict.ack,
    }


# Runs a degenerate response may repeat, and openings that put a pattern's cue words before them.
_RUNS = (" ", "\n", " \n", "(", "-", ", ", "'", '"', ". ", "*", "**", "_", ": ", "; ", "a ", "the ", "men ", " he", "x", "0")
_OPENINGS = ("", "he ", "the book ", "answer is ", "nurses are ", "but ", "solution ", "most ", "stereotype ", "'he' is ")


def judge_patterns() -> list[tuple[str, Any]]:
    """(name, compiled pattern) of every pattern in the rule files (`rule_files`: the files the
    rules id hashes)."""
    import importlib

    names = [f"alignment.{p.parent.name}.{p.stem}" for p in rule_files()]
    out = []
    for name in names:
        for attr, obj in vars(importlib.import_module(name)).items():
            if not isinstance(obj, str) and hasattr(obj, "search") and hasattr(obj, "pattern"):
                out.append((f"{name.rsplit('.', 1)[-1]}.{attr}", obj))
    return out


def scan_runs(repeats: int = 3000, limit: float = 0.02) -> tuple[int, list[tuple[float, str, str, str]]]:
    """(searches made, [(seconds, pattern, run, opening)] for each search slower than `limit`):
    every pattern on `opening + run * repeats + opening + "x"`. A pattern whose adjacent optional
    runs the engine can split in many ways is quadratic or worse in a run's length."""
    slow, n = [], 0
    for name, pattern in judge_patterns():
        for run in _RUNS:
            for opening in _OPENINGS:
                text = opening + run * repeats + " " + opening + "x"
                started = time.perf_counter()
                pattern.search(text)
                n += 1
                if (seconds := time.perf_counter() - started) > limit:
                    slow.append((seconds, name, run, opening))
    return n, sorted(slow, reverse=True)


if __name__ == "__main__":
    searches, slow = scan_runs()
    print(f"{len(judge_patterns())} patterns, {searches} searches, {len(slow)} over 0.02 s")
    for seconds, name, run, opening in slow[:20]:
        print(f"  {seconds:.3f} s  {name}  run {run!r}  opening {opening!r}")
