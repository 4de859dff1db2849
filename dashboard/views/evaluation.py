"""The Evaluation page: stored runs, starting one, its progress, its charts, table and downloads."""

from __future__ import annotations

import csv
import json
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from archive.models import Site
from dashboard.charts import evaluation as charts
from dashboard.forms import EvaluationForm, LearnForm
from dashboard.roles import librarian_required
from dashboard.views.jobs import explain
from hacs import defaults
from hacs_site.clock import today
from scheduling.evaluation_service import BOTH, evaluation_run_create, evaluation_run_refresh
from scheduling.jobs import enqueue_evaluation, enqueue_learning
from scheduling.learning import (
    LearningPeriod,
    learned_scorer_create,
    learned_scorer_summary,
    learning_history,
    learning_period_default,
)
from scheduling.models import EvaluationRun, LearnedScorer, Level

RUNS_SHOWN = 20
LEARNED_SHOWN = 10


def evaluation(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":  # the form posts to evaluation_start; same rules here
        return evaluation_start(request)
    return _page(request, None)


@require_POST
@librarian_required
def evaluation_start(request: HttpRequest) -> HttpResponse:
    form = EvaluationForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    run = evaluation_run_create(parameters=form.parameters(), user=request.user)
    enqueue_evaluation(run, user=request.user)
    messages.success(request, f"Evaluation run {run.pk} queued; a worker will start it shortly.")
    return redirect(f"{reverse('evaluation')}?run={run.pk}")


@require_POST
@librarian_required
def learning_start(request: HttpRequest) -> HttpResponse:
    """Queue the learning of a scheduler (``learn_scorer`` in a worker)."""
    form = LearnForm(request.POST)
    if form.is_valid():
        try:
            scorer = learned_scorer_create(parameters=form.parameters(), user=request.user)
        except ValueError as error:
            form.add_error(None, str(error))
        else:
            enqueue_learning(scorer, user=request.user)
            messages.success(
                request,
                f"Learning run {scorer.pk} ({scorer.get_kind_display()}) queued; "
                "a worker will start it shortly.",
            )
            return redirect(f"{reverse('evaluation')}#learned-heading")
    return _page(request, None, status=400, learn_form=form)


def _page(
    request: HttpRequest,
    form: EvaluationForm | None,
    status: int = 200,
    learn_form: LearnForm | None = None,
) -> HttpResponse:
    runs = list(EvaluationRun.objects.defer("results").select_related("created_by")[:RUNS_SHOWN])
    held = learning_history(level=Level.HOMEPAGE)  # one aggregate over the observations
    # The collection's own history: its earlier part to learn on, the later part to test.
    learn_period = learning_period_default(level=Level.HOMEPAGE, today=today(), history=held)
    if form is None:
        form = EvaluationForm(initial=_initial(runs[0] if runs else None, held, learn_period))
    if learn_form is None:
        learn_form = LearnForm(initial={"start": learn_period.start, "end": learn_period.end})
    selected = _selected_run(request, runs)
    context: dict[str, Any] = {
        "runs": runs,
        "form": form,
        "selected": selected,
        "learn_form": learn_form,
        "learn_period": learn_period,
        "learned_runs": _learned_runs(),
        # Sites whose copies before their window still wait for the history pass: an evaluation
        # of those earlier years reads fewer copies of them until it has run.
        "older_pending": Site.objects.filter(older_pending__gt=0).count(),
        "history_days": settings.HACS_HISTORY_DAYS,
    }
    if selected is not None and selected.status == EvaluationRun.Status.DONE and selected.results:
        results = selected.results
        context["empty"] = not any(i.get("observations") for i in results["levels"].values())
        context["tables"] = charts.table_view(results)
        context["levels"] = [(lv, charts.LEVEL_LABELS.get(lv, lv)) for lv in results["levels"]]
        context["w_weeks"] = results["parameters"]["w_weeks"]
        replay = results.get("replay")  # runs stored before the replay section have none
        context["replay"] = replay
        context["learned"] = charts.learned_sections(results)
        context["ranking_legend"] = charts.ranking_legend(results)
        context["model_details"] = charts.model_details(results)
        context["charts"] = {
            "threshold": charts.threshold_figures(results),
            "ranking": charts.ranking_figures(results),
            "intervals": charts.interval_figures(results),
            "replay": charts.replay_figure(replay) if replay else None,
            "learned": charts.learned_figures(results),
        }
    return render(request, "dashboard/evaluation.html", context, status=status)


def _initial(
    latest: EvaluationRun | None, held: tuple[date, date] | None, learn: LearningPeriod
) -> dict[str, Any]:
    """The newest run's settings, so a librarian can vary one; else the period the Learn box
    keeps for testing (the later third of the history, after the part it learns on), so that
    the two forms' defaults never overlap; else, for a history too short to split, the paper's
    three years of weekly reference points, ending a week before the collection's last
    observation (the last whose week after t is held) or a week ago, whichever is earlier, and
    starting no earlier than its first."""
    if latest is not None:
        p = latest.parameters
        try:
            w_weeks = [int(w) for w in p["w_weeks"]]
            return {
                "start": p["start"],
                "end": p["end"],
                "method": p.get("method", "interpolated"),
                "level": BOTH if len(p["levels"]) > 1 else p["levels"][0],
                "w_from": min(w_weeks),
                "w_to": max(w_weeks),
            }
        except (KeyError, IndexError, TypeError, ValueError):
            pass  # a run stored by hand with odd parameters: fall back to the defaults
    chosen = {"level": BOTH, "w_from": 1, "w_to": 12, "method": "interpolated"}
    if learn.test_start is not None and learn.test_end is not None:
        return {"start": learn.test_start, "end": learn.test_end, **chosen}
    end = today() - timedelta(days=7)
    start = end - timedelta(days=defaults.HISTORY_DAYS)
    if held is not None:
        first, last = held
        end = min(end, last - timedelta(days=7))
        start = max(first, end - timedelta(days=defaults.HISTORY_DAYS))
        if start >= end:  # a history of a week or two: evaluate all of it
            start, end = first, last
    return {"start": start, "end": end, **chosen}


def _learned_runs() -> list[LearnedScorer]:
    """The newest learning runs, each with what the table says of it: ``summary`` (a finished
    one's fit in words and its formula) and ``explained`` (a failed one's error as a sentence)."""
    shown = list(LearnedScorer.objects.defer("curve")[:LEARNED_SHOWN])
    for scorer in shown:
        done = scorer.status == LearnedScorer.Status.DONE
        scorer.summary = learned_scorer_summary(scorer) if done else None  # type: ignore[attr-defined]
        scorer.explained = explain(scorer.error)  # type: ignore[attr-defined]
    return shown


def _selected_run(request: HttpRequest, runs: list[EvaluationRun]) -> EvaluationRun | None:
    """``?run=N``, or the newest run."""
    wanted = request.GET.get("run")
    if wanted is None:
        return evaluation_run_refresh(_full(runs[0].pk)) if runs else None
    if not wanted.isdigit():
        raise Http404("No such evaluation run.")
    return evaluation_run_refresh(_full(int(wanted)))


def _full(pk: int) -> EvaluationRun:
    return get_object_or_404(EvaluationRun.objects.select_related("created_by"), pk=pk)


@require_GET
def evaluation_status(request: HttpRequest, pk: int) -> JsonResponse:
    """The page polls this while a run is queued or running."""
    run = evaluation_run_refresh(get_object_or_404(EvaluationRun.objects.defer("results"), pk=pk))
    return JsonResponse(
        {
            "id": run.pk,
            "status": run.status,
            "status_label": run.get_status_display(),
            "progress": run.progress,
            "error": run.error,
            "duration_seconds": run.duration_seconds,
        }
    )


def _finished(pk: int) -> EvaluationRun:
    run = get_object_or_404(EvaluationRun, pk=pk)
    if run.status != EvaluationRun.Status.DONE or not run.results:
        raise Http404("This evaluation run has no results yet.")
    return run


@require_GET
def evaluation_download_json(request: HttpRequest, pk: int) -> HttpResponse:
    run = _finished(pk)
    document = {"run": run.pk, **(run.results or {})}
    response = HttpResponse(
        json.dumps(document, indent=1, allow_nan=False), content_type="application/json"
    )
    response["Content-Disposition"] = f'attachment; filename="hacs-evaluation-{run.pk}.json"'
    return response


@require_GET
def evaluation_download_table_csv(request: HttpRequest, pk: int) -> HttpResponse:
    run = _finished(pk)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="hacs-evaluation-{run.pk}-table.csv"'
    writer = csv.writer(response, lineterminator="\n")
    writer.writerow(charts.TABLE_COLUMNS)
    for row in charts.table_rows(run.results or {}):
        writer.writerow([_cell(value) for value in row])
    return response


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    # A spreadsheet would run a cell starting with one of these as a formula.
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text
