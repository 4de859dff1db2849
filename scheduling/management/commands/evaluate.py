import argparse
import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from hacs.estimators import METHODS
from hacs.evaluation.summary import summary_lines
from scheduling.evaluation_service import (
    LEVEL_CHOICES,
    evaluation_run,
    evaluation_run_create,
    levels_of,
    parse_w_weeks,
)
from scheduling.management.commands._options import day, plain


def w_range(text: str) -> list[int]:
    try:
        return parse_w_weeks(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


class Command(BaseCommand):
    help = (
        "Evaluate HACS against its baselines over a past period (the paper's Evaluations 1 and "
        "2) and write the results as JSON: every curve point, Table I, weighted P@K and more. "
        "A summary (F1 at θ̂ and weighted P@K per w, the HACS posterior beside the paper's "
        "HACS and the baselines) goes to stderr."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--start", type=day, required=True, help="first reference point")
        parser.add_argument("--end", type=day, required=True, help="last reference point")
        parser.add_argument(
            "--level", choices=[value for value, _ in LEVEL_CHOICES], default="both"
        )
        parser.add_argument(
            "--w-weeks",
            type=w_range,
            default=list(range(1, 13)),
            help="history sizes in weeks: 1-12 (default), 4, or 1,2,4",
        )
        parser.add_argument("--method", choices=METHODS, default="interpolated")
        parser.add_argument("--output", type=Path, help="write the JSON here (default: stdout)")
        parser.add_argument("--enqueue", action="store_true", help="hand the run to a worker")

    def handle(self, *args: object, **options: object) -> None:
        parameters = {
            "start": options["start"].isoformat(),  # type: ignore[attr-defined]
            "end": options["end"].isoformat(),  # type: ignore[attr-defined]
            "levels": levels_of(str(options["level"])),
            "w_weeks": options["w_weeks"],
            "method": options["method"],
        }
        try:
            run = evaluation_run_create(parameters=parameters)
        except ValueError as error:
            raise CommandError(str(error)) from None
        if options["enqueue"]:
            from scheduling.jobs import enqueue_evaluation

            record = enqueue_evaluation(run)
            self.stdout.write(f"Evaluation run {run.pk} queued as job {record.pk}.")
            return
        try:
            results = evaluation_run(run=run)
        except ValueError as error:
            raise CommandError(f"Evaluation run {run.pk} failed: {error}") from None
        text = json.dumps(results, indent=1, allow_nan=False)
        output = options["output"]
        if isinstance(output, Path):
            output.write_text(text + "\n", encoding="utf-8")
            self.stdout.write(self.style.SUCCESS(f"Evaluation run {run.pk} written to {output}."))
        else:
            self.stdout.write(text)
        self.stderr.write("\n".join(summary_lines(results)), style_func=plain)
