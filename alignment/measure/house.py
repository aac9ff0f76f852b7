"""The package measured as a map: its import graph, loops between folders, depth and sizes.

    python -m alignment.measure.house [PACKAGE_DIR]

prints the summary `tests/test_architecture.py` holds the package to: no loop between modules or
between folders, no private name imported across modules, at most 12 modules at the package root,
no folder over 3,000 lines. A folder is a package directory; a module at the package root is a
room of its own (the kernel's modules are not one folder). Depth is the longest chain of imports
once each loop is counted as one node; back-edges are the imports that close a loop in a
depth-first walk (zero exactly when the graph has no loop).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path


def module_files(root: Path) -> dict[str, Path]:
    """Dotted module name → file, for every .py under the package folder `root`."""
    mods: dict[str, Path] = {}
    for p in sorted(root.rglob("*.py")):
        parts = p.relative_to(root.parent).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return mods


def imports_of(name: str, path: Path, mods: dict[str, Path]) -> list[tuple[str, str]]:
    """(module, imported name or '') pairs for each package import in one file."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, "") if sub in mods else (target, a.name))
    return [(m, n) for m, n in out if m in mods]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → package modules it imports (module level and inside functions alike)."""
    mods = module_files(root)
    return {n: {m for m, _ in imports_of(n, p, mods) if m != n} for n, p in mods.items()}


def folder_of(name: str, mods: dict[str, Path]) -> str:
    """A module's folder: its package; a module at the package root is a room of its own."""
    if mods[name].name == "__init__.py":
        return name
    parent = name.rsplit(".", 1)[0]
    return name if "." not in parent else parent


def folder_graph(root: Path) -> dict[str, set[str]]:
    """Folder → folders it imports. A `__main__` module is left out: an entry point that nothing
    imports sits above every folder, whichever folder holds the file."""
    mods = module_files(root)
    g: dict[str, set[str]] = defaultdict(set)
    for n, deps in import_graph(root).items():
        if n.endswith(".__main__"):
            continue
        a = folder_of(n, mods)
        g[a]
        for d in deps:
            b = folder_of(d, mods)
            if b != a and not a.startswith(b + "."):  # a sub-folder may use its parent's __init__
                g[a].add(b)
    return dict(g)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative).

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def back_edges(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges that close a loop in a depth-first walk (sorted order): zero exactly when acyclic.

    >>> back_edges({"a": {"b"}, "b": {"a", "c"}, "c": set()})
    [('b', 'a')]
    """
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    out: list[tuple[str, str]] = []
    for start in sorted(graph):
        if start in state:
            continue
        state[start] = 1
        work = [(start, iter(sorted(graph[start])))]
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                state[v] = 2
                work.pop()
            elif state.get(w) == 1:
                out.append((v, w))
            elif w not in state:
                state[w] = 1
                work.append((w, iter(sorted(graph.get(w, ())))))
    return out


def depth(graph: dict[str, set[str]]) -> int:
    """Longest chain of imports (edges), each loop counted as one node.

    >>> depth({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}})
    2
    """
    comp = {n: n for n in graph}
    for c in cycles(graph):
        for n in c:
            comp[n] = c[0]
    dag: dict[str, set[str]] = defaultdict(set)
    for n, deps in graph.items():
        dag[comp[n]] |= {comp[d] for d in deps if comp.get(d, d) != comp[n]}
    memo: dict[str, int] = {}

    def longest(n: str) -> int:
        if n not in memo:
            memo[n] = 0
            memo[n] = max((1 + longest(d) for d in dag.get(n, ())), default=0)
        return memo[n]

    return max((longest(n) for n in list(dag)), default=0)


def private_imports(root: Path) -> list[str]:
    """`module imports other.module._name` lines: a private name used outside its module."""
    mods = module_files(root)
    out = []
    for n, p in mods.items():
        for m, name in imports_of(n, p, mods):
            if name.startswith("_") and not name.startswith("__") and m != n:
                out.append(f"{n} imports {m}.{name}")
    return sorted(set(out))


def root_modules(root: Path) -> list[str]:
    """The modules directly in the package folder."""
    return sorted(p.stem for p in root.glob("*.py"))


def folder_lines(root: Path) -> dict[str, int]:
    """Lines of Python per folder (its own files, not its sub-folders)."""
    out: dict[str, int] = {}
    for d in [root, *sorted(p for p in root.rglob("*") if p.is_dir() and any(p.glob("*.py")))]:
        out[str(d.relative_to(root.parent))] = sum(len(f.read_text().splitlines()) for f in d.glob("*.py"))
    return out


def summary(root: Path) -> dict[str, object]:
    """The numbers `python -m alignment.measure.house` prints."""
    modules, folders = import_graph(root), folder_graph(root)
    lines = folder_lines(root)
    return {
        "modules": len(modules),
        "module depth": depth(modules),
        "module cycles": len(cycles(modules)),
        "folder nodes": len(folders),
        "folder depth": depth(folders),
        "folder cycles": cycles(folders),
        "folder back-edges": len(back_edges(folders)),
        "private imports": len(private_imports(root)),
        "root modules": len(root_modules(root)),
        "largest folder": max(lines.items(), key=lambda kv: kv[1]),
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(summary(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]), indent=1, default=str))
