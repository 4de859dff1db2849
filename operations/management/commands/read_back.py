from django.core.management.base import BaseCommand

from jobs.models import JobRecord
from operations.readback import crawl_read_back


class Command(BaseCommand):
    help = (
        "Read back now what the library's crawlers fetched, as the scheduler does every "
        "HACS_CRAWL_READBACK_CRON: the Heritrix jobs and Browsertrix crawls hand-offs sent "
        "lists to, and the crawl inbox (HACS_CRAWL_INBOX)."
    )

    def handle(self, *args: object, **options: object) -> None:
        newest = JobRecord.objects.filter(kind=JobRecord.Kind.READ_BACK).order_by("-pk").first()
        made = crawl_read_back()
        records = JobRecord.objects.filter(kind=JobRecord.Kind.READ_BACK).order_by("pk")
        if newest is not None:
            records = records.filter(pk__gt=newest.pk)
        for record in records:
            counts = ", ".join(f"{k}: {v:,}" for k, v in record.counts.items()) or "nothing"
            self.stdout.write(f"{record.label} — {record.get_status_display()}: {counts}")
            for failure in record.failures:
                self.stderr.write(f"  {failure.get('item')}: {failure.get('reason')}")
        self.stdout.write(f"{made} read-back job{'s' * (made != 1)}; the Jobs page lists them.")
