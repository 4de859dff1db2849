from django.contrib import admin

from handoff.models import CrawlFile, FollowedCrawl, HandOff, HandOffRun, ListYield


@admin.register(HandOff)
class HandOffAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "enabled", "level", "tag", "target_display"]
    list_filter = ["kind", "enabled", "level"]
    search_fields = ["name", "job_dir", "api_url"]
    fieldsets = [
        (None, {"fields": ["name", "kind", "enabled", "level", "tag"]}),
        ("Heritrix 3", {"fields": ["job_dir"]}),
        (
            "Browsertrix",
            {
                "fields": [
                    "api_url",
                    "org_id",
                    "workflow_id",
                    "token_env",
                    "username_env",
                    "password_env",
                ]
            },
        ),
    ]

    @admin.display(description="sends the list to")
    def target_display(self, obj: HandOff) -> str:
        return obj.target


@admin.register(HandOffRun)
class HandOffRunAdmin(admin.ModelAdmin):
    """What each hand-off sent; how it ended is its job's (``status`` reads it)."""

    list_display = ["hand_off", "crawl_list", "status", "sites", "created_by", "created_at"]
    list_filter = ["job__status", "hand_off"]
    list_select_related = ["hand_off", "crawl_list", "job", "created_by"]
    readonly_fields = [
        "hand_off",
        "crawl_list",
        "job",
        "status",
        "sites",
        "steps",
        "message",
        "created_by",
        "created_at",
    ]

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(FollowedCrawl)
class FollowedCrawlAdmin(admin.ModelAdmin):
    """The Browsertrix crawls hand-offs started, and how following them ended."""

    list_display = ["crawl_id", "run", "state", "status", "checked_at", "ended_at"]
    list_filter = ["status"]
    readonly_fields = [
        "run",
        "crawl_id",
        "state",
        "status",
        "checked_at",
        "ended_at",
        "message",
        "job",
    ]

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(CrawlFile)
class CrawlFileAdmin(admin.ModelAdmin):
    """The crawl files read back, remembered so that none is read twice; delete a row to have
    its file read again."""

    list_display = ["key", "hand_off", "size", "status", "captures", "read_at"]
    list_filter = ["status", "hand_off"]
    search_fields = ["key", "name"]
    readonly_fields = [
        "key",
        "hand_off",
        "name",
        "size",
        "mtime_ns",
        "digest",
        "status",
        "message",
        "captures",
        "job",
        "read_at",
    ]

    def has_add_permission(self, request: object) -> bool:
        return False


@admin.register(ListYield)
class ListYieldAdmin(admin.ModelAdmin):
    list_display = ["crawl_list", "handed_off_at", "listed", "reached", "changed", "expected"]
    readonly_fields = [
        "crawl_list",
        "handed_off_at",
        "listed",
        "expected",
        "reached",
        "changed",
        "computed_at",
    ]

    def has_add_permission(self, request: object) -> bool:
        return False
