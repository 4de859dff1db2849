from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings


class SeedUploadForm(forms.Form):
    file = forms.FileField(
        label="Seed list file (CSV or plain text)",
        required=False,
        help_text="CSV with a header row (url required; author and tags optional, tags separated "
        "by ;) or one URL per line.",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.txt,text/csv,text/plain"}),
    )
    text = forms.CharField(
        label="…or paste URLs, one per line",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
    )
    tags = forms.CharField(
        label="Tags for every seed (optional)", required=False, max_length=300,
        help_text="Separated by commas, e.g. “computer science, 2026 intake”.",
    )  # fmt: skip
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

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not self.errors and not data.get("file") and not data.get("text", "").strip():
            raise forms.ValidationError("Choose a file or paste some URLs.")
        return data

    def seed_bytes(self) -> bytes:
        upload = self.cleaned_data.get("file")
        if upload is not None:
            return b"".join(upload.chunks())
        return str(self.cleaned_data["text"]).encode("utf-8")

    def tag_list(self) -> list[str]:
        return [t.strip() for t in str(self.cleaned_data.get("tags", "")).split(",") if t.strip()]
