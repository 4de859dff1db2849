from django.contrib import admin

from archive.models import Capture, LinkSnapshot, Site, SiteHealth, Tag


@admin.register(Tag)
class TagAdmin(admin.ModelAdmin):
    search_fields = ["name"]


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    list_display = ["seed_url", "author", "import_status", "imported_at", "created_at"]
    list_filter = ["import_status", "tags"]
    search_fields = ["seed_url", "author", "canonical_key"]
    readonly_fields = ["canonical_key", "created_at", "updated_at", "imported_at"]
    filter_horizontal = ["tags"]
    raw_id_fields = ["moved_to"]  # a select of 20,000 sites would be no use
    list_per_page = 50
    show_full_result_count = False


@admin.register(Capture)
class CaptureAdmin(admin.ModelAdmin):
    list_display = ["url", "timestamp", "depth", "kind", "status", "mimetype", "source"]
    list_filter = ["kind", "depth", "is_observation"]
    search_fields = ["urlkey", "url"]
    raw_id_fields = ["site", "snapshot"]
    list_select_related = True
    date_hierarchy = "timestamp"
    show_full_result_count = False


@admin.register(LinkSnapshot)
class LinkSnapshotAdmin(admin.ModelAdmin):
    list_display = ["urlkey", "digest", "status", "link_count", "fetched_at"]
    list_filter = ["status"]
    search_fields = ["urlkey", "digest"]
    show_full_result_count = False


@admin.register(SiteHealth)
class SiteHealthAdmin(admin.ModelAdmin):
    list_display = ["site", "problem", "since", "count", "target", "last_good", "computed_at"]
    list_filter = ["problem", "captured"]
    search_fields = ["site__seed_url", "site__author", "target"]
    raw_id_fields = ["site"]
    list_select_related = True
    show_full_result_count = False
