"""The shape of the code base: apps import one way, and no source file grows past a page count.

HACS's Django apps form layers, each importing only the ones before it (settings'
INSTALLED_APPS order): jobs → archive → scheduling → handoff → operations → dashboard. The pure
package ``hacs`` imports none of them (``tests/hacs/test_pure.py`` keeps Django out of it
altogether).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["jobs", "archive", "scheduling", "handoff", "operations", "dashboard"]
MAX_LINES = 1000


def imported_packages(path: Path) -> set[str]:
    """Top-level packages a module imports, wherever the import statement stands."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def source_files(package: str) -> list[Path]:
    return [p for p in (ROOT / package).rglob("*.py") if "migrations" not in p.parts]


def test_the_layers_are_the_installed_apps_in_order(settings: object) -> None:
    installed = [app for app in settings.INSTALLED_APPS if app in LAYERS]  # type: ignore[attr-defined]
    assert installed == LAYERS


@pytest.mark.parametrize("app", LAYERS)
def test_an_app_imports_only_the_apps_below_it(app: str) -> None:
    above = set(LAYERS[LAYERS.index(app) + 1 :])
    files = source_files(app)
    assert files, f"{app} has no modules"
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & above)
        for path in files
        if imported_packages(path) & above
    }
    assert wrong == {}


def test_nothing_hacs_runs_imports_the_testbed_or_the_tests() -> None:
    """The fake servers and the demo tables are tools for tests and benches, not the product."""
    files = [
        path
        for package in ("hacs", "hacs_demo", "hacs_site", *LAYERS)
        for path in source_files(package)
    ]
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & {"testbed", "tests"})
        for path in files
        if imported_packages(path) & {"testbed", "tests"}
    }
    assert len(files) > 100 and wrong == {}


def test_the_benches_import_no_test() -> None:
    files = source_files("bench")
    assert len(files) > 10
    assert {str(p.relative_to(ROOT)) for p in files if "tests" in imported_packages(p)} == set()


def test_the_project_package_imports_no_app() -> None:
    """hacs_site (settings, the clock, the web server's worker) lies under every app: the apps
    read it, and it names them only as strings (INSTALLED_APPS, the URLconf's include)."""
    files = source_files("hacs_site")
    assert len(files) > 5
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & set(LAYERS))
        for path in files
        if imported_packages(path) & set(LAYERS)
    }
    assert wrong == {}


@pytest.mark.parametrize("package", ["hacs", "hacs_demo"])
def test_the_pure_packages_import_no_app(package: str) -> None:
    files = source_files(package)
    assert len(files) > 10
    wrong = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & {*LAYERS, "hacs_site"})
        for path in files
        if imported_packages(path) & {*LAYERS, "hacs_site", "django"}
    }
    assert wrong == {}


def test_the_method_and_the_demo_generator_do_not_import_each_other() -> None:
    """The demo archive is made without the method it is used to test, and the method never
    needs the demo."""
    crossing = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & {other})
        for package, other in (("hacs", "hacs_demo"), ("hacs_demo", "hacs"))
        for path in source_files(package)
        if other in imported_packages(path)
    }
    assert crossing == {}


def test_the_import_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from dashboard.views import home\n    import archive.models\n")
    assert imported_packages(module) == {"dashboard", "archive"}


def test_no_source_file_is_longer_than_a_thousand_lines() -> None:
    packages = ["hacs", "hacs_demo", "hacs_site", "bench", "scripts", *LAYERS]
    lengths = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in packages
        for path in source_files(package)
    }
    assert len(lengths) > 40
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}
