from django.apps import AppConfig


class HandoffConfig(AppConfig):
    name = "handoff"
    verbose_name = "Hand-offs: the crawl list written or sent to a crawler"
