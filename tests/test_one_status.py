"""One status, on the job: the runs keep their results and read where they stand from their job,
and a site's import status has one writer."""

from __future__ import annotations

import ast
from pathlib import Path

from django.apps import apps

from handoff.models import HandOffRun
from scheduling.models import EvaluationRun, LearnedScorer

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["jobs", "archive", "scheduling", "handoff", "operations", "dashboard", "hacs_site"]
IMPORT_STATUS_WRITER = ROOT / "archive" / "status.py"
JOB_FIELDS = {"status", "progress", "error", "duration_seconds", "finished_at", "started_at"}


def import_status_writes(path: Path) -> list[int]:
    """Lines of ``path`` that write ``import_status``: an assignment to it, or a call other
    than a query's filter passing it as a keyword."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and t.attr == "import_status" for t in targets):
                found.append(node.lineno)
        elif isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            keywords = {k.arg for k in node.keywords}
            if "import_status" in keywords and name not in {"filter", "exclude", "Q", "get"}:
                found.append(node.lineno)
    return found


def test_the_import_status_check_finds_writes_and_leaves_queries_alone(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "site.import_status = 'done'\n"
        "Site.objects.filter(pk=1).update(import_status='running')\n"
        "Site.objects.create(seed_url='x', import_status='failed')\n"
        "Site.objects.filter(import_status='failed').count()\n"
        "Q(import_status='failed') | Q(pk=1)\n"
    )
    assert import_status_writes(module) == [1, 2, 3]


def test_only_one_module_writes_a_sites_import_status() -> None:
    files = [p for package in SOURCES for p in (ROOT / package).rglob("*.py")]
    assert import_status_writes(IMPORT_STATUS_WRITER)  # the check sees the writer itself
    writes = {
        str(path.relative_to(ROOT)): lines
        for path in files
        if path != IMPORT_STATUS_WRITER
        and "migrations" not in path.parts
        and (lines := import_status_writes(path))
    }
    assert writes == {}


def test_no_run_keeps_a_status_of_its_own() -> None:
    for model in (EvaluationRun, LearnedScorer, HandOffRun):
        fields = {f.name for f in model._meta.get_fields()}
        assert not fields & JOB_FIELDS, model.__name__
        assert "job" in fields
    assert "dailyrun" not in {m._meta.model_name for m in apps.get_models()}
