"""The shape of src/spark_git, read from its source with ast (nothing is imported):

- layers: cli -> ops -> {protocol, gates, clients} -> guard -> state -> core. A module imports only its
  own package and lower layers; protocol, gates and clients do not import each other; guard (the hook
  policy, client-neutral) sits under the client adapters. spark_git/__init__.py
  and spark_git/__main__.py are the entry on top (and every module may import the package root
  `spark_git` itself, for __version__);
- ops/ by feature over two floors: ops.shared (services) imports nothing else of ops; ops.queue (the
  merge queue, a room of its own) imports only ops.shared; a feature package (life, landing, ending,
  views, setup) imports no other feature package, only ops.queue, ops.shared and the layers below;
- no import cycles;
- no module over 600 lines.

Every import counts: top-level, function-local and under `if TYPE_CHECKING:` (a one-way rule has no
exceptions for where the import statement sits)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from spark_git.clients import registry

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = "spark_git"
MAX_LINES = 600
FEATURES = ("life", "landing", "ending", "views", "setup")
SHARED = "shared"
QUEUE = "queue"  # between the features and the shared floor
FLOORS = (QUEUE, SHARED)  # lower floor last
RANK = {"core": 0, "state": 1, "guard": 2, "protocol": 3, "gates": 3, "clients": 3, "ops": 4, "cli": 5}
TOP = len(RANK) + 1  # spark_git/__init__.py, spark_git/__main__.py


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    line: int

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst} (line {self.line})"


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the package (a package is its __init__.py)."""
    found = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_package(name: str, mods: dict[str, Path]) -> bool:
    return mods[name].name == "__init__.py"


def _resolve(node: ast.Import | ast.ImportFrom, here: str, mods: dict[str, Path]) -> list[str]:
    """The spark_git modules an import statement names: `from a import b` is module a.b when that
    exists, else module a (b is an attribute)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        pkg = here.split(".") if _is_package(here, mods) else here.split(".")[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([base] if base else []))
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in mods else base)
    return out


def edges(mods: dict[str, Path]) -> list[Edge]:
    res = []
    for name, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _resolve(node, name, mods):
                    while target and target not in mods and target.startswith(ROOT + "."):
                        target = target.rpartition(".")[0]  # `import spark_git.x.y` with y an attribute
                    if target in mods and target != name:
                        res.append(Edge(name, target, node.lineno))
    return list(dict.fromkeys(res))  # `from m import a, b` is one edge


def layer(name: str) -> tuple[str, int]:
    """(package, rank) of a module: spark_git.ops.landing.merge -> ("ops", 4); the entry modules are on top."""
    parts = name.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return ("", TOP)
    return (parts[1], RANK.get(parts[1], -1))


def layer_violations(es: list[Edge]) -> list[str]:
    bad = []
    for e in es:
        (spkg, srank), (dpkg, drank) = layer(e.src), layer(e.dst)
        if e.dst == ROOT or spkg == dpkg:
            continue
        if srank < 0 or drank < 0:
            bad.append(f"{e}: {e.src if srank < 0 else e.dst} is in no layer")
        elif drank >= srank:
            bad.append(f"{e}: {spkg} may not import {dpkg}")
    return bad


def ops_part(name: str) -> str | None:
    """The ops package a module is in: spark_git.ops.landing.merge -> "landing"; None outside ops."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "ops" else None


def feature_violations(es: list[Edge]) -> list[str]:
    bad = []
    for e in es:
        src, dst = ops_part(e.src), ops_part(e.dst)
        if src is None or dst is None or src == dst:
            continue
        known = (*FEATURES, *FLOORS)
        if src not in known or dst not in known:
            bad.append(f"{e}: {e.src if src not in known else e.dst} is in no ops package (shared, queue or a feature)")
        elif src in FLOORS and (dst not in FLOORS or FLOORS.index(dst) <= FLOORS.index(src)):
            bad.append(f"{e}: ops.{src} may not import ops.{dst} (floors import only the floor below them)")
        elif src not in FLOORS and dst not in FLOORS:
            bad.append(f"{e}: the feature {src} may not import the feature {dst} (move what both need to ops/shared)")
    return bad


def cycles(es: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, list[str]] = {}
    for e in es:
        graph.setdefault(e.src, []).append(e.dst)
        graph.setdefault(e.dst, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
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
                        found.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on.add(w)
                work.append((w, iter(graph[w])))
            elif w in on:
                low[v] = min(low[v], index[w])
    return sorted(found)


def test_the_import_graph_is_read() -> None:
    mods = modules()
    es = edges(mods)
    assert "spark_git.cli" in mods and "spark_git.core" in mods
    assert any(e.src.startswith("spark_git.cli") and e.dst.startswith("spark_git.ops") for e in es)
    assert any(e.src == "spark_git.__main__" and e.dst.startswith("spark_git.cli") for e in es)  # function-local


def test_layers_import_only_downwards() -> None:
    bad = layer_violations(edges(modules()))
    assert not bad, f"{len(bad)} import(s) against the layer rule:\n" + "\n".join(bad)


def test_ops_features_meet_only_on_the_shared_floor() -> None:
    mods = modules()
    assert {ops_part(m) for m in mods} - {None} == {*FEATURES, *FLOORS}
    bad = feature_violations(edges(mods))
    assert not bad, f"{len(bad)} import(s) against the feature rule:\n" + "\n".join(bad)


def client_violations(es: list[Edge]) -> list[str]:
    """Imports of a client's package from outside it: everything about one client lives in
    clients/<client>/ and is reached through the registry and its plug-in kinds (issue 32 item 7)."""
    pkgs = {f"{ROOT}.clients.{n}" for n in registry.CLIENTS}

    def pkg(m: str) -> str | None:
        return next((p for p in pkgs if m == p or m.startswith(p + ".")), None)
    return [str(e) for e in es if pkg(e.dst) and pkg(e.src) != pkg(e.dst)]


def test_nothing_outside_a_client_package_imports_it() -> None:
    assert client_violations([Edge("spark_git.ops.shared.keep", "spark_git.clients.codex.box", 1),
                              Edge("spark_git.clients.codex.setup", "spark_git.clients.codex", 2)]) == [
        "spark_git.ops.shared.keep -> spark_git.clients.codex.box (line 1)"]  # the check catches one, not its own package
    bad = client_violations(edges(modules()))
    assert not bad, f"{len(bad)} import(s) of a client package from outside it:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    es = edges(modules())
    found = cycles(es)
    report = []
    for comp in found:
        inside = [str(e) for e in es if e.src in comp and e.dst in comp]
        report.append(f"cycle of {len(comp)} modules: {', '.join(comp)}\n    " + "\n    ".join(inside))
    assert not found, "\n".join(report)


def test_no_module_over_600_lines() -> None:
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: " + ", ".join(f"{k} ({v})" for k, v in sorted(long.items(), key=lambda kv: -kv[1]))


def test_the_checks_catch_what_they_should() -> None:
    es = [Edge("spark_git.state.files", "spark_git.ops.landing.merge", 1), Edge("spark_git.gates.command", "spark_git.protocol.machine", 2),
          Edge("spark_git.ops.landing.merge", "spark_git.state.files", 3), Edge("spark_git.__main__", "spark_git.cli", 4),
          Edge("spark_git.cli.common", "spark_git", 5), Edge("spark_git.clients.hooks", "spark_git.clients.checkpoint", 6),
          Edge("spark_git.guard.writes", "spark_git.clients.registry", 7), Edge("spark_git.clients.hooks", "spark_git.guard.policy", 8)]
    assert layer_violations(es) == [
        "spark_git.state.files -> spark_git.ops.landing.merge (line 1): state may not import ops",
        "spark_git.gates.command -> spark_git.protocol.machine (line 2): gates may not import protocol",
        "spark_git.guard.writes -> spark_git.clients.registry (line 7): guard may not import clients",
    ]
    assert cycles(es) == [["spark_git.ops.landing.merge", "spark_git.state.files"]]
