from django.contrib import admin

from scheduling.models import CrawlList, CrawlListEntry, Estimate, EvaluationRun


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
    """Evaluation runs and their results; where each stands is its job's (``job``)."""

    list_display = ["pk", "status", "progress", "duration_seconds", "created_by", "created_at"]
    list_filter = ["job__status"]
    list_select_related = ["job", "created_by"]
    readonly_fields = ["results", "job"]
