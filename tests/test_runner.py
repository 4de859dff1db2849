"""One runner owns a job's record: its status, lease and progress, whoever runs the job.

The runner's transitions (finished, partial, failed, interrupted), its ``on_stop`` hook, its one
way to report progress (a percentage on the Jobs page, the one bar on a terminal), and checks of
the source tree that no other module writes a job's status or draws a bar.
"""

from __future__ import annotations

import ast
import io
from functools import partial
from pathlib import Path

import pytest
from tqdm import tqdm

import jobs.bar
from hacs.progress import Progress
from jobs.bar import terminal_progress
from jobs.models import JobRecord
from jobs.runner import INTERRUPTED_REASON, JobRun
from jobs.services import job_record_create
from operations.management.commands._progress import files_written_progress

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parent.parent


class Stops:
    """An ``on_stop`` hook that remembers what it was told."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, str]] = []

    def __call__(self, record: JobRecord, reason: str) -> None:
        self.calls.append((record.pk, record.status, reason))


def queued() -> JobRecord:
    return job_record_create(kind=JobRecord.Kind.IMPORT, label="three sites", total=3)


def test_a_run_marks_its_record_running_and_then_finished() -> None:
    record = queued()
    stops = Stops()
    with JobRun.resume(record.pk, on_stop=stops) as run:
        running = JobRecord.objects.get(pk=record.pk)
        assert running.status == JobRecord.Status.RUNNING and running.worker
        assert running.started_at is not None and running.heartbeat_at is not None
        for site in ("a", "b", "c"):
            run.report(Progress(done=1, item=site, counts={"captures added": 2}))
    record.refresh_from_db()
    assert (record.status, record.done, record.error) == (JobRecord.Status.FINISHED, 3, "")
    assert record.counts == {"captures added": 6} and record.finished_at is not None
    assert record.fraction == 1.0 and stops.calls == []


def test_some_failed_items_make_it_partial_and_all_of_them_failed() -> None:
    some, every = queued(), queued()
    with JobRun.resume(some.pk) as run:
        run.report(Progress(done=1, item="a"))
        run.report(Progress(done=1, item="b", failure="HTTP 404"))
    with JobRun.resume(every.pk) as run:
        run.report(Progress(done=1, item="a", failure="HTTP 503"))
        run.report(Progress(done=1, item="b", failure="HTTP 404"))
        assert run.failures == [("a", "HTTP 503"), ("b", "HTTP 404")]
    some.refresh_from_db()
    every.refresh_from_db()
    assert some.status == JobRecord.Status.PARTIAL and some.error == ""
    assert some.failures == [{"item": "b", "reason": "HTTP 404"}]
    assert every.status == JobRecord.Status.FAILED
    assert every.error == "All 2 failed; the reasons are listed below."


def test_an_exception_fails_the_run_with_its_sentence_and_calls_the_hook() -> None:
    record = queued()
    stops = Stops()
    with pytest.raises(ValueError), JobRun.resume(record.pk, on_stop=stops) as run:
        run.report(Progress(done=1, item="a"))
        raise ValueError("the file ends mid-record")
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FAILED and record.finished_at is not None
    assert record.error == "ValueError: the file ends mid-record"
    assert stops.calls == [(record.pk, "failed", "ValueError: the file ends mid-record")]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_ctrl_c_or_a_stop_signal_interrupts_the_run_and_calls_the_hook(
    stop: type[BaseException],
) -> None:
    stops = Stops()
    with pytest.raises(stop):
        with JobRun.start(
            kind=JobRecord.Kind.IMPORT,
            label="from a terminal",
            queue="terminal",
            total=2,
            items=[7, 8],
            on_stop=stops,
        ) as run:
            run.report(Progress(done=1, item="a"))
            raise stop()
    record = JobRecord.objects.get()
    assert (record.queue, record.items, record.done) == ("terminal", [7, 8], 1)
    assert "(terminal, pid " in record.worker
    assert record.status == JobRecord.Status.INTERRUPTED and record.error == INTERRUPTED_REASON
    assert record.finished_at is None and record.elapsed_seconds is not None
    assert stops.calls == [(record.pk, "interrupted", INTERRUPTED_REASON)]


def test_a_run_interrupted_here_stays_interrupted_when_its_threads_report_late() -> None:
    """After Ctrl-C, an import's threads may still finish a fetch and report it: the run this
    process interrupted is not made to run again (a CI run under load caught the record
    "running" after Ctrl-C)."""
    with pytest.raises(KeyboardInterrupt):
        with JobRun.start(
            kind=JobRecord.Kind.IMPORT, label="t", queue="terminal", total=2, items=[1, 2]
        ) as run:
            raise KeyboardInterrupt
    run.report(Progress(done=1, item="late", counts={"captures": 3}))
    run.report(Progress(done=1))
    record = JobRecord.objects.get()
    assert record.status == JobRecord.Status.INTERRUPTED
    assert record.done == 0 and "captures" not in record.counts


def test_a_run_the_sweep_marked_interrupted_runs_again_when_its_worker_reports() -> None:
    """The other side: a live worker whose record the sweep marked interrupted (it seemed
    dead) reports, and its record runs again."""
    with JobRun.start(kind=JobRecord.Kind.IMPORT, label="t", queue="import", total=2) as run:
        JobRecord.objects.filter(pk=run.record.pk).update(status=JobRecord.Status.INTERRUPTED)
        run.report(Progress(done=1, item="a"))
        assert JobRecord.objects.get().status == JobRecord.Status.RUNNING
        run.report(Progress(done=1, item="b"))


def test_an_ending_keeps_the_outcome_and_what_the_block_wrote_whole() -> None:
    """A hand-off's record ends in one transaction with its run: if the block fails, neither is
    kept, and the run ends failed with the block's exception."""
    with pytest.raises(RuntimeError):
        with JobRun.start(kind=JobRecord.Kind.HAND_OFF, label="h", queue="web") as run:
            with run.ending(error="The crawler refused the list."):
                job_record_create(kind=JobRecord.Kind.HEALTH, label="written in the block")
                raise RuntimeError("the database went away")
    record = JobRecord.objects.get()  # the block's row is gone with its transaction
    assert record.status == JobRecord.Status.FAILED
    assert record.error == "RuntimeError: the database went away"

    with JobRun.start(kind=JobRecord.Kind.HAND_OFF, label="h", queue="web") as run:
        with run.ending(error="The crawler refused the list."):
            pass
    run.record.refresh_from_db()
    assert (run.record.status, run.record.error) == ("failed", "The crawler refused the list.")


def test_a_report_revives_a_run_the_sweep_took_for_dead() -> None:
    record = queued()
    with JobRun.resume(record.pk) as run:
        JobRecord.objects.filter(pk=record.pk).update(
            status=JobRecord.Status.INTERRUPTED, error=INTERRUPTED_REASON
        )
        run.report(Progress(done=1))
        revived = JobRecord.objects.get(pk=record.pk)
        assert (revived.status, revived.error) == (JobRecord.Status.RUNNING, "")
    record.refresh_from_db()
    assert record.status == JobRecord.Status.FINISHED


def test_a_fanned_out_run_is_left_to_its_items_unless_it_has_none() -> None:
    record, empty = queued(), queued()
    with JobRun.resume(record.pk) as run:
        run.fan_out([4, 5])
    with JobRun.resume(empty.pk) as run:
        run.fan_out([])
    record.refresh_from_db()
    empty.refresh_from_db()
    assert (record.status, record.total, record.items) == ("running", 2, [4, 5])
    assert empty.status == JobRecord.Status.FINISHED


def test_progress_is_a_percentage_of_the_total_on_the_record() -> None:
    record = job_record_create(kind=JobRecord.Kind.EVALUATION, label="run 1")
    with JobRun.resume(record.pk) as run:
        run.report(Progress(total=100))
        run.report(Progress(fraction=0.424))
        written = JobRecord.objects.get(pk=record.pk).heartbeat_at
        run.report(Progress(fraction=0.42))  # not a step further: nothing written
        assert JobRecord.objects.get(pk=record.pk).heartbeat_at == written
        assert JobRecord.objects.get(pk=record.pk).fraction == pytest.approx(0.42)
        run.report(Progress(started=(3, 4), counts={"records read": 10}))
        run.report(Progress(started=[4, 5]))
        run.report(Progress(notes={"database": "sqlite"}))
    record.refresh_from_db()
    assert record.done == 42 and record.items == [3, 4, 5]
    assert record.counts == {"records read": 10, "database": "sqlite"}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_draws_the_same_progress_as_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every change drawn at once (tqdm draws at most ten times a second otherwise).
    monkeypatch.setattr(jobs.bar, "tqdm", partial(tqdm, mininterval=0, miniters=1))
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with JobRun.start(kind=JobRecord.Kind.IMPORT, label="t", queue="terminal", total=4) as run:
        with run.bar("Importing", unit="site"):
            run.report(Progress(done=1, item="a"))
            run.report(Progress(done=1, item="b", failure="HTTP 404"))
            assert run.record.fraction == 0.5
            shown = terminal.getvalue()
            assert "Importing:  50%|" in shown and "2/4" in shown
        with run.bar(
            "Reading", unit="B", count="bytes read", of="bytes in files", postfix="sites fetched"
        ):
            run.report(Progress(counts={"bytes in files": 2000}))
            run.report(Progress(counts={"bytes read": 500}))
            run.report(Progress(counts={"sites fetched": 3}))
            shown = terminal.getvalue()
            assert "Reading:  25%|" in shown and "3 sites fetched" in shown


def test_work_without_a_job_draws_the_same_bar(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A replay's share, and the demo archive's files as they are written, go through the
    same report and the same bar."""
    monkeypatch.setattr(jobs.bar, "tqdm", partial(tqdm, mininterval=0, miniters=1))
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with terminal_progress("Replaying", total=100, unit="%") as report:
        report(Progress(fraction=0.5))
        assert "Replaying:  50%|" in terminal.getvalue()
    written = tmp_path / "seeds.txt"
    with files_written_progress([(written, "Writing seeds.txt")], "Drawing the sites") as writing:
        writing("seeds.txt")
        assert "Writing seeds.txt" in terminal.getvalue()


def test_progress_is_reported_one_way() -> None:
    """A run has one method to report progress, and one module draws a bar."""
    public = {name for name in vars(JobRun) if not name.startswith("_")}
    assert "report" in public
    assert not public & {"advance", "fraction", "item", "step", "note", "fail_item", "set_total"}
    drawing = []
    for room in [*SOURCES, "bench"]:
        for path in (ROOT / room).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                if any(name.split(".")[0] == "tqdm" for name in names):
                    drawing.append(path.relative_to(ROOT).as_posix())
    assert drawing == ["jobs/bar.py"]


def test_no_bar_is_drawn_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with JobRun.start(kind=JobRecord.Kind.IMPORT, label="t", queue="terminal", total=1) as run:
        with run.bar("Importing", unit="site"):
            run.report(Progress(done=1, item="a"))
    assert pipe.getvalue() == ""


# --- Nothing else writes a job's status -----------------------------------------------------------

SOURCES = ["jobs", "archive", "scheduling", "handoff", "operations", "dashboard", "hacs_site"]
RUNNER = ROOT / "jobs" / "runner.py"
WRITES = {"update", "create", "get_or_create", "update_or_create", "bulk_create", "JobRecord"}


def status_writes(path: Path) -> list[int]:
    """Lines of ``path`` that write a job record's status: an assignment to a ``status`` of a
    record (or of ``JobRecord.Status…``), a ``setattr`` of it, or a query or constructor writing
    ``status=`` on JobRecord. Queries that only filter by status are not writes."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = ast.unparse(node.value) if node.value is not None else ""
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "status":
                    if "JobRecord" in value or "record" in ast.unparse(target.value).lower():
                        found.append(node.lineno)
        elif isinstance(node, ast.Call):
            func = node.func
            name = getattr(func, "attr", getattr(func, "id", ""))
            if name == "setattr" and len(node.args) > 1:
                if ast.unparse(node.args[1]) == "'status'":
                    found.append(node.lineno)
                continue
            status = [k.value for k in node.keywords if k.arg == "status"]
            receiver = ast.unparse(func.value) if isinstance(func, ast.Attribute) else ""
            if status and name in WRITES:
                if "JobRecord" in ast.unparse(status[0]) + receiver or name == "JobRecord":
                    found.append(node.lineno)
    return found


def test_the_status_check_finds_writes_and_leaves_queries_alone(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "record.status = 'failed'\n"
        "run.record.status = JobRecord.Status.RUNNING\n"
        "JobRecord.objects.filter(pk=1).update(status='running')\n"
        "records.update(status=JobRecord.Status.INTERRUPTED, error='x')\n"
        "JobRecord.objects.create(rq_id='x', status=JobRecord.Status.RUNNING)\n"
        "setattr(record, 'status', 'finished')\n"
        "JobRecord.objects.filter(status=JobRecord.Status.RUNNING).exists()\n"
        "records.exclude(status__in=JobRecord.ENDED)\n"
        "run.status = EvaluationRun.Status.FAILED\n"
        "DailyRun.objects.filter(pk=1).update(status=DailyRun.Status.RUNNING)\n"
    )
    assert status_writes(module) == [1, 2, 3, 4, 5, 6]


def test_only_the_runner_writes_a_jobs_status() -> None:
    files = [p for package in SOURCES for p in (ROOT / package).rglob("*.py")]
    assert RUNNER in files and len(files) > 40
    assert status_writes(RUNNER)  # the check sees the runner's own writes
    writes = {
        str(path.relative_to(ROOT)): lines
        for path in files
        if path != RUNNER and "migrations" not in path.parts and (lines := status_writes(path))
    }
    assert writes == {}
