"""The admin's view of feed addresses: who has one and since when, and the way to retire one."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from dashboard.models import FeedToken


@admin.register(FeedToken)
class FeedTokenAdmin(admin.ModelAdmin):
    """Lists each user's feed address without its secret parts (``nonce`` and ``digest`` never
    show); deleting one retires the address at once, and its user can make a new one on the
    Feeds page."""

    list_display = ("user", "created_at")
    fields = ("user", "created_at")
    readonly_fields = ("user", "created_at")
    search_fields = ("user__username",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
