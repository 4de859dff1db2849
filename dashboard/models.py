"""What the dashboard itself stores: each user's secret feed address."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class FeedToken(models.Model):
    """A user's secret feed address, which lets a feed reader read HACS's feeds without a login.

    The address's token is derived from ``nonce`` with the installation's ``SECRET_KEY``
    (``dashboard.feeds.feed_address_token``), so the database alone holds no working address;
    ``digest`` (the token's SHA-256) finds the row a request names. Resetting draws a new
    ``nonce``, which retires the old address.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feed_token"
    )
    nonce = models.CharField(max_length=64)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(help_text="When the address was made or last reset.")

    def __str__(self) -> str:
        return f"Feed address of {self.user}"
