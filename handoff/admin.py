from django.contrib import admin

from handoff.models import HandOff, HandOffRun


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
                ]  # fmt: skip
            },
        ),
    ]

    @admin.display(description="sends the list to")
    def target_display(self, obj: HandOff) -> str:
        return obj.target


@admin.register(HandOffRun)
class HandOffRunAdmin(admin.ModelAdmin):
    list_display = ["hand_off", "crawl_list", "status", "sites", "created_by", "created_at"]
    list_filter = ["status", "hand_off"]
    readonly_fields = [
        "hand_off", "crawl_list", "job", "status", "sites", "steps", "message", "created_by",
        "created_at",
    ]  # fmt: skip

    def has_add_permission(self, request: object) -> bool:
        return False
