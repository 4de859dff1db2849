from django.contrib import admin

from scheduling.models import CrawlList, CrawlListEntry, DailyRun, Estimate, EvaluationRun


@admin.register(Estimate)
class EstimateAdmin(admin.ModelAdmin):
    list_display = [
        "site",
        "level",
        "method",
        "rate",
        "tau",
        "observations",
        "updates",
        "computed_at",
    ]
    list_filter = ["level", "method"]
    search_fields = ["site__seed_url", "site__author"]
    raw_id_fields = ["site"]
    list_select_related = ["site"]
    show_full_result_count = False


class CrawlListEntryInline(admin.TabularInline):
    model = CrawlListEntry
    raw_id_fields = ["site"]
    extra = 0
    max_num = 0
    readonly_fields = ["rank", "site", "probability", "rate", "tau"]
    can_delete = False


@admin.register(CrawlList)
class CrawlListAdmin(admin.ModelAdmin):
    list_display = [
        "date",
        "level",
        "method",
        "theta",
        "budget",
        "eligible_sites",
        "source",
        "created_by",
        "terminal_user",
        "created_at",
    ]
    list_filter = ["level", "method", "source"]
    date_hierarchy = "date"
    inlines = [CrawlListEntryInline]


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ["pk", "status", "progress", "duration_seconds", "created_by", "created_at"]
    list_filter = ["status"]
    readonly_fields = ["results"]


@admin.register(DailyRun)
class DailyRunAdmin(admin.ModelAdmin):
    """The daily job's runs, one a date. Deleting one lets the catch-up make that day's run
    again (the list, built again or found identical, handed off again): how an admin repeats a
    morning."""

    list_display = ["date", "status", "attempts", "crawl_list", "started_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = [
        "date",
        "status",
        "attempts",
        "crawl_list",
        "job",
        "started_at",
        "finished_at",
        "error",
    ]

    def has_add_permission(self, request: object) -> bool:
        return False
