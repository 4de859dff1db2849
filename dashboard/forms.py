"""Forms of the dashboard's pages.

``SiteListForm`` validates the Sites table's query string. A link can carry anything (old
bookmarks, hand-edited URLs), so a bad value never fails the page: each field that does not
validate falls back to its default and the rest still apply. ``SeedUploadForm`` is the Upload
seeds page's; ``CrawlListForm`` the Crawl list page's; ``EvaluationForm`` the Evaluation page's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

from django import forms
from django.conf import settings

from archive.models import Site, Tag
from dashboard.health import HEALTH_FILTERS
from dashboard.sites import DEFAULT_SORT, HISTORY_FILTERS, SORT_KEYS, SiteListQuery
from hacs.estimators import METHODS
from hacs.formats.seeds import split_tags
from hacs_site.clock import today
from scheduling.crawl_lists import MAX_E_DAYS, MAX_HISTORY_DAYS, CrawlListOptions
from scheduling.evaluation_service import BOTH, LEVEL_CHOICES, MAX_W_WEEKS, levels_of
from scheduling.learning import NoLearnedScorer, learned_scorer_latest
from scheduling.models import DEFAULT_METHOD, LIST_METHOD_CHOICES, Learned, Level, Method

SORT_CHOICES = [(key, key) for key in SORT_KEYS] + [(f"-{key}", f"-{key}") for key in SORT_KEYS]


class SiteListForm(forms.Form):
    q = forms.CharField(
        label="Search author or URL",
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "e.g. Smith or ~smith"}),
    )
    tag = forms.ChoiceField(label="Tag", required=False)
    status = forms.ChoiceField(
        label="Import",
        required=False,
        choices=[("", "Any status"), *Site.ImportStatus.choices, ("paused", "Paused")],
    )
    history = forms.ChoiceField(
        label="History", required=False, choices=[("", "Any history"), *HISTORY_FILTERS.items()]
    )
    health = forms.ChoiceField(
        label="Health", required=False, choices=[("", "Any health"), *HEALTH_FILTERS.items()]
    )
    level = forms.ChoiceField(label="Level", required=False, choices=Level.choices)
    method = forms.ChoiceField(label="Method", required=False, choices=Method.choices)
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES, widget=forms.HiddenInput)
    page = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(self, *args: Any, tags: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["tag"].choices = [("", "Any tag"), *((name, name) for name in tags)]  # type: ignore[attr-defined]

    def query(self) -> SiteListQuery:
        """The table's settings: each valid, non-empty field, or that field's default."""
        cleaned = self.cleaned_data if self.is_valid() else getattr(self, "cleaned_data", {})
        defaults = SiteListQuery()
        values = {
            f.name: cleaned.get(f.name) or getattr(defaults, f.name) for f in fields(defaults)
        }
        return SiteListQuery(**values)

    def page_number(self) -> int:
        self.is_valid()
        return int(getattr(self, "cleaned_data", {}).get("page") or 1)

    @classmethod
    def showing(cls, query: SiteListQuery, *, tags: Sequence[str]) -> SiteListForm:
        """An unbound form whose controls show the settings in effect (after any fallback)."""
        initial = asdict(query)
        if initial["sort"] == DEFAULT_SORT:
            initial["sort"] = ""
        return cls(initial=initial, tags=tags)


class SeedUploadForm(forms.Form):
    file = forms.FileField(
        label="Seed list file (CSV or plain text)",
        required=False,
        help_text="A CSV file with a header row: url required, author and tags optional, several "
        "tags in one cell separated by semicolons (ml;theory). Or one URL per line.",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.txt,text/csv,text/plain"}),
    )
    # The token of the file checked a moment ago, held on the server so that "Add and import"
    # needs no second choice of the same file (``dashboard.views.upload``).
    held = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)
    text = forms.CharField(
        label="…or paste URLs, one per line",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
    )
    tags = forms.CharField(
        label="Tags for every seed (optional)",
        required=False,
        max_length=300,
        help_text="Separated by semicolons, as in the CSV's tags column, e.g. “computer science; "
        "2026 intake” (a comma or | separates tags too).",
    )
    user_directories_only = forms.BooleanField(
        label="Keep only user-directory homepages (~name), as in the HACS paper", required=False
    )
    import_history = forms.BooleanField(
        label="Import the new sites' archive history right away", required=False, initial=True
    )

    def clean_file(self) -> Any:
        upload = self.cleaned_data.get("file")
        limit = settings.HACS_MAX_UPLOAD_BYTES
        if upload is not None and upload.size > limit:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; the limit is {limit:,}. Split it into "
                "smaller lists."
            )
        return upload

    def clean_tags(self) -> str:
        text = str(self.cleaned_data.get("tags", ""))
        limit = Tag._meta.get_field("name").max_length or 0
        for tag in split_tags(text):
            if len(tag) > limit:
                raise forms.ValidationError(
                    f"The tag “{tag[:40]}…” is {len(tag):,} characters long; a tag holds at "
                    f"most {limit:,}."
                )
        return text

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        chosen = data.get("file") or data.get("held") or data.get("text", "").strip()
        if not self.errors and not chosen:
            raise forms.ValidationError("Choose a file or paste some URLs.")
        return data

    def tag_list(self) -> list[str]:
        """The tags typed for every seed, split as a CSV's tags cell is (``split_tags``)."""
        return list(split_tags(str(self.cleaned_data.get("tags", ""))))


class CrawlListForm(forms.Form):
    day = forms.DateField(label="Date", widget=forms.DateInput(attrs={"type": "date"}))
    theta = forms.FloatField(
        label="Threshold θ",
        required=False,
        min_value=0,
        max_value=1,
        help_text="Keep sites whose probability of change is at least θ (blank: no threshold).",
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )
    budget = forms.IntegerField(
        label="Budget k",
        required=False,
        min_value=1,
        help_text="Keep at most the top k sites (blank: no limit). With θ blank, the list holds k.",
    )
    level = forms.ChoiceField(label="Level", choices=Level.choices, initial=Level.HOMEPAGE)
    method = forms.ChoiceField(
        label="Method",
        choices=LIST_METHOD_CHOICES,
        initial=DEFAULT_METHOD,
        help_text="An estimate's probability of change, or a scheduler learned on the collection.",
    )
    history_days = forms.IntegerField(
        label="History window (days)",
        min_value=1,
        max_value=MAX_HISTORY_DAYS,
        help_text="Only captures from this many days before the date are used.",
    )
    e_days = forms.FloatField(
        label="Horizon e (days)",
        min_value=0,
        max_value=MAX_E_DAYS,
        help_text="The list predicts a change within this many days of the date.",
    )

    @classmethod
    def initial_values(cls) -> dict[str, Any]:
        """The daily job's settings (``CrawlListOptions.from_settings``) for today."""
        return {"day": today(), **CrawlListOptions.from_settings().to_json()}

    def options(self) -> CrawlListOptions:
        data = self.cleaned_data
        return CrawlListOptions(
            level=data["level"],
            method=data["method"],
            theta=data["theta"],
            budget=data["budget"],
            history_days=data["history_days"],
            e_days=data["e_days"],
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("theta") is None and data.get("budget") is None and not self.errors:
            raise forms.ValidationError(
                "No list was built: give a threshold θ (the sites whose P(change) reaches it), a "
                "budget k (the k most likely to have changed), or both. θ 0 lists every site."
            )
        if data.get("method") in Learned.values and data.get("level"):
            try:
                learned_scorer_latest(data["method"], data["level"])
            except NoLearnedScorer as error:
                self.add_error("method", str(error))
        return data


MAX_PERIOD_DAYS = 20 * 366  # an evaluation period of at most 20 years


class EvaluationForm(forms.Form):
    start = forms.DateField(label="Start (first t)", widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(label="End (last t)", widget=forms.DateInput(attrs={"type": "date"}))
    level = forms.ChoiceField(choices=LEVEL_CHOICES, initial=BOTH)
    w_from = forms.IntegerField(
        label="History w from", min_value=1, max_value=MAX_W_WEEKS, initial=1
    )
    w_to = forms.IntegerField(label="to (weeks)", min_value=1, max_value=MAX_W_WEEKS, initial=12)
    method = forms.ChoiceField(
        choices=[(m, m.capitalize()) for m in METHODS],
        initial="interpolated",
        label="Rate estimate for the paper's g",
        help_text="The HACS posterior, the default, always takes part; this chooses the rate "
        "estimate behind the paper's g: observed (Eq. 4–5) or interpolated (Section II-B2).",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if start and end:
            if end < start:
                self.add_error("end", "The end must not be before the start.")
            elif (end - start).days > MAX_PERIOD_DAYS:
                self.add_error("end", "The period may span at most 20 years.")
        w_from, w_to = data.get("w_from"), data.get("w_to")
        if w_from and w_to and w_to < w_from:
            self.add_error("w_to", "The largest history size must not be below the smallest.")
        return data

    def parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "start": data["start"].isoformat(),
            "end": data["end"].isoformat(),
            "levels": levels_of(data["level"]),
            "w_weeks": list(range(data["w_from"], data["w_to"] + 1)),
            "method": data["method"],
        }


class LearnForm(forms.Form):
    """The Evaluation page's form that learns a scheduler (``learn_scorer``'s main options)."""

    kind = forms.ChoiceField(label="Scheduler", choices=Learned.choices, initial=Learned.GP4C)
    level = forms.ChoiceField(label="Level", choices=Level.choices, initial=Level.HOMEPAGE)
    start = forms.DateField(
        label="Learn from",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The first day of the history it learns from.",
    )
    end = forms.DateField(
        label="to",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Evaluate a later period to test it.",
    )

    def parameters(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "kind": data["kind"],
            "level": data["level"],
            "start": data["start"].isoformat(),
            "end": data["end"].isoformat(),
        }
