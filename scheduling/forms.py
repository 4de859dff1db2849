from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.utils import timezone

from scheduling.models import Level, Method


class CrawlListForm(forms.Form):
    day = forms.DateField(label="Date", widget=forms.DateInput(attrs={"type": "date"}))
    theta = forms.FloatField(
        label="Threshold θ", required=False, min_value=0, max_value=1,
        help_text="Keep sites whose probability of change is at least θ (blank: no threshold).",
        widget=forms.NumberInput(attrs={"step": "0.05"}),
    )  # fmt: skip
    budget = forms.IntegerField(
        label="Budget k", required=False, min_value=1,
        help_text="Keep at most the top k sites (blank: no limit).",
    )  # fmt: skip
    level = forms.ChoiceField(label="Level", choices=Level.choices, initial=Level.HOMEPAGE)
    method = forms.ChoiceField(label="Method", choices=Method.choices, initial=Method.OBSERVED)
    history_days = forms.IntegerField(
        label="History window (days)", min_value=1, max_value=36500,
        help_text="Only captures from this many days before the date are used.",
    )  # fmt: skip
    e_days = forms.FloatField(
        label="Horizon e (days)", min_value=0, max_value=3650,
        help_text="The list predicts a change within this many days of the date.",
    )  # fmt: skip

    @classmethod
    def initial_values(cls) -> dict[str, Any]:
        return {
            "day": timezone.now().date(),
            "theta": settings.HACS_THETA,
            "level": Level.HOMEPAGE,
            "method": Method.OBSERVED,
            "history_days": settings.HACS_HISTORY_DAYS,
            "e_days": settings.HACS_E_DAYS,
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("theta") is None and data.get("budget") is None and not self.errors:
            raise forms.ValidationError(
                "Give a threshold θ, a budget k, or both; otherwise every site is listed."
            )
        return data
