"""The floor plan holds: apps import only earlier apps, audits_app's packages only lower floors,
and no module imports another that imports it back, not even from inside a function.

The graph is read from the source with `ast` (every `import`, at any depth, except under
`if TYPE_CHECKING:`), so an import tucked into a function to dodge a cycle counts like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("scenarios_app", "runs_app", "audits_app")  # each may import only those before it
# The parts of baitbench_site that every app may use; they import no app themselves.
SITE_BASE = {"baitbench_site.roles", "baitbench_site.immutability", "baitbench_site.post_only",
             "baitbench_site.admin_refusals", "baitbench_site.security", "baitbench_site.methods",
             "baitbench_site.yaml_files", "baitbench_site.files",
             "baitbench_site.command_args"}
# audits_app's floors, bottom to top (shared/LAYOUT.md): a package imports its own floor or lower.
AUDITS_FLOORS = [
    # Every model is registered under audits_app (the arena's too), so all sit at the bottom.
    {"statistics", "csv_files", "query_params", "models", "templatetags.numbers", "arena.models",
     "arena.validators", "text_codes", "calibration.studies.weights",
     "publication.snapshot_model"},  # the snapshot's schema imports nothing of the project
    {"leaderboard", "spotchecks"},
    # A reading study's figures sit with the other calibration figures; the study itself
    # (its pages, services, admin, demo) uses the arena's reviews and limits, so sits beside it.
    {"calibration", "calibration.studies.calibration", "calibration.studies.figures",
     "calibration.studies.selectors"},
    {"publication"},
    {"pages"},
    {"arena", "review", "archive", "http_cache", "verification", "calibration.studies"},
    {"api"},
    {"admin", "urls", "apps", "management", "templatetags"},
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules() -> dict[str, Path]:
    found = {}
    for top in (*APPS, "baitbench_site"):
        for path in (ROOT / top).rglob("*.py"):
            relative = path.relative_to(ROOT).parts
            if "tests" in relative or "migrations" in relative or "testing" in relative:
                continue
            found[module_name(path)] = path
    return found


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported(tree: ast.AST, modules: set[str]) -> set[str]:
    """The project's modules that `tree` imports, resolved to the longest known module name."""
    names: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _type_checking_only(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names}
            names.update(submodules)
            # `from package import module` passes through the package's __init__ on the way
            # to the module: an arrow to the module only.
            if not submodules <= modules:
                names.add(node.module)
        stack.extend(ast.iter_child_nodes(node))
    return {name for name in names if name in modules}


def import_graph() -> dict[str, set[str]]:
    modules = source_modules()
    graph = {}
    for name, path in modules.items():
        targets = imported(ast.parse(path.read_text()), set(modules)) - {name}
        # A package's __init__ is imported on the way to its modules: not an arrow of its own.
        graph[name] = {target for target in targets
                       if not (name.startswith(target + ".")
                               and modules[target].name == "__init__.py")}
    return graph


def app_of(module: str) -> str:
    return module.split(".")[0]


def audits_floor(module: str) -> int | None:
    parts = module.split(".")[1:]
    for length in (3, 2, 1):
        key = ".".join(parts[:length])
        for floor, names in enumerate(AUDITS_FLOORS):
            if key in names:
                return floor
    return None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for source, targets in graph.items():
        for target in targets:
            a, b = app_of(source), app_of(target)
            if a == "baitbench_site" and source in SITE_BASE and b != "baitbench_site":
                found.append(f"{source} -> {target} (the site's base imports no app)")
            elif a in APPS and b == "baitbench_site" and target not in SITE_BASE:
                found.append(f"{source} -> {target} (apps use only the site's base)")
            elif a in APPS and b in APPS and APPS.index(b) > APPS.index(a):
                found.append(f"{source} -> {target} ({a} comes before {b})")
            elif a == b == "audits_app":
                low, high = audits_floor(source), audits_floor(target)
                if low is None or high is None:
                    found.append(f"{source} -> {target} (a module on no floor)")
                elif high > low:
                    found.append(f"{source} -> {target} (floor {low} imports floor {high})")
    return sorted(found)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_runs_up_a_floor():
    assert upward_imports(import_graph()) == []


def test_no_two_modules_import_each_other():
    assert cycles(import_graph()) == []


def test_the_checks_see_an_upward_import_and_a_cycle():
    graph = {"runs_app.a": {"audits_app.pages.viewer"},
             "audits_app.statistics.x": {"audits_app.api.views"},
             "runs_app.b": {"runs_app.c"}, "runs_app.c": {"runs_app.b"}}
    assert upward_imports(graph) == [
        "audits_app.statistics.x -> audits_app.api.views (floor 0 imports floor 6)",
        "runs_app.a -> audits_app.pages.viewer (runs_app comes before audits_app)",
    ]
    assert cycles(graph) == [["runs_app.b", "runs_app.c"]]


def test_a_function_level_import_is_an_arrow_too():
    tree = ast.parse("def f():\n    from runs_app.tasks import x\n")
    assert imported(tree, {"runs_app.tasks"}) == {"runs_app.tasks"}


def modules_of_tests(roots: tuple[str, ...] = (*APPS, "baitbench_site", "tests")) -> dict:
    """Every test_*.py module of the project, by dotted name."""
    return {module_name(path): path for top in roots for path in (ROOT / top).rglob("test_*.py")}


def imports_between_test_modules(modules: dict[str, Path]) -> list[str]:
    """Imports of one test module by another: what they share belongs in a module named for it
    (tests/browser.py, tests/world.py, an app's conftest or factories), not in a test file
    that others then load, fixtures and all."""
    return sorted(f"{name} -> {target}" for name, path in modules.items()
                  for target in imported(ast.parse(path.read_text()), set(modules))
                  if target != name)


def test_no_test_module_imports_another():
    assert imports_between_test_modules(modules_of_tests()) == []


def test_the_check_sees_a_test_module_imported_by_another(tmp_path):
    (tmp_path / "test_a.py").write_text("from tests.test_b import helper\n")
    (tmp_path / "test_b.py").write_text("def helper():\n    return 1\n")
    modules = {"tests.test_a": tmp_path / "test_a.py", "tests.test_b": tmp_path / "test_b.py"}
    assert imports_between_test_modules(modules) == ["tests.test_a -> tests.test_b"]
