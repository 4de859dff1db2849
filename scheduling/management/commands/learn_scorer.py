from django.core.management.base import BaseCommand, CommandError, CommandParser

from hacs.learning.gp4c import GENERATIONS, POPULATION
from jobs.bar import terminal_progress
from scheduling.jobs import enqueue_learning, learning_run_here
from scheduling.learning import LearnedSummary, learned_scorer_create, learned_scorer_summary
from scheduling.management.commands._options import day, positive
from scheduling.models import Learned, LearnedScorer, Level


class Command(BaseCommand):
    help = (
        "Learn a crawl scheduler on the collection's history over a period: a GP4C score "
        "function evolved by genetic programming (--kind gp4c, the default) or the LWS "
        "regression of the time to each site's next update (--kind lws). The newest one "
        "learned at a level ranks the crawl lists of its method (crawl_list --method gp4c)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--start", type=day, required=True, help="first day of the period")
        parser.add_argument("--end", type=day, required=True, help="last day of the period")
        parser.add_argument("--kind", choices=Learned.values, default=Learned.GP4C)
        parser.add_argument("--level", choices=Level.values, default=Level.HOMEPAGE)
        parser.add_argument(
            "--fitness",
            choices=["ndcg", "changerate"],
            default="ndcg",
            help="GP4C: NDCG@k (default) or ChangeRate@k at a 5%% budget",
        )
        for flag, paper in (("--generations", GENERATIONS), ("--population", POPULATION)):
            parser.add_argument(
                flag, type=positive, default=paper, help=f"GP4C (default {paper}, the paper's)"
            )
        parser.add_argument(
            "--weeks", type=positive, default=12, help="GP4C: history window in weeks (12)"
        )
        parser.add_argument("--seed", type=int, default=0, help="same seed, same result")
        parser.add_argument("--enqueue", action="store_true", help="hand the run to a worker")

    def handle(self, *args: object, **options: object) -> None:
        parameters = {
            "kind": options["kind"],
            "level": options["level"],
            "start": options["start"].isoformat(),  # type: ignore[attr-defined]
            "end": options["end"].isoformat(),  # type: ignore[attr-defined]
            "fitness": options["fitness"],
            "generations": options["generations"],
            "population": options["population"],
            "w_weeks": options["weeks"],
            "seed": options["seed"],
        }
        try:
            scorer = learned_scorer_create(parameters=parameters)
        except ValueError as error:
            raise CommandError(str(error)) from None
        if options["enqueue"]:
            record = enqueue_learning(scorer)
            self.stdout.write(f"Learning run {scorer.pk} queued as job {record.pk}.")
            return
        # Kept as a job: the Jobs page shows it beside the workers' runs.
        with terminal_progress("Learning", total=100, unit="%", postfix="stage") as report:
            try:
                scorer = learning_run_here(scorer, report=report)
            except ValueError as error:
                raise CommandError(f"Learning run {scorer.pk} failed: {error}") from None
        self.stdout.write(f"Learning run {scorer.pk}: {scorer}")
        summary = learned_scorer_summary(scorer)
        if scorer.kind == Learned.GP4C:
            self._write_gp4c(scorer, summary)
        else:
            self._write_lws(scorer)
        self.stdout.write(summary.fit.sentence)
        self.stdout.write(
            f"crawl_list --method {scorer.kind} --level {scorer.level} now ranks with it."
        )

    def _write_gp4c(self, scorer: LearnedScorer, summary: LearnedSummary) -> None:
        """The evolved score function, simplified with its legend, and its fitness."""
        model = scorer.model or {}
        formula = summary.formula
        self.stdout.write(f"score = {formula.text if formula else model.get('formula')}")
        for name, meaning in formula.legend if formula else ():
            self.stdout.write(f"  {name:3} = {meaning}")
        if formula and formula.simplified:
            self.stdout.write(f"  (simplified; as stored: {model.get('formula')})")
        self.stdout.write(
            f"{scorer.parameters['fitness']} at a 5% budget: training "
            f"{scorer.training_fitness:.4f}, validation {scorer.validation_fitness:.4f}"
        )

    def _write_lws(self, scorer: LearnedScorer) -> None:
        """The regression's coefficients and how well it predicts held-out sites."""
        model = scorer.model or {}
        for name, weight in zip(
            model.get("features", []), model.get("coefficients", []), strict=True
        ):
            self.stdout.write(f"  {name:28} {weight:+.4f}")
        r2 = scorer.validation_fitness
        self.stdout.write(
            f"R² on held-out sites: {'—' if r2 is None else f'{r2:.3f}'}; "
            f"{model.get('samples', 0):,} samples"
        )
