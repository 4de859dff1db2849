"""Forms of the archive pages.

``SiteListForm`` validates the Sites table's query string. A link can carry anything (old
bookmarks, hand-edited URLs), so a bad value never fails the page: each field that does not
validate falls back to its default and the rest still apply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Any

from django import forms

from archive.models import Site
from archive.services import DEFAULT_SORT, HISTORY_FILTERS, SORT_KEYS, SiteListQuery
from scheduling.models import Level, Method

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
        choices=[("", "Any status"), *Site.ImportStatus.choices],
    )
    history = forms.ChoiceField(
        label="History",
        required=False,
        choices=[("", "Any history"), *HISTORY_FILTERS.items()],
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
