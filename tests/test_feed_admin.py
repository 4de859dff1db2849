"""The admin lists feed addresses without their secrets; deleting one retires the address."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.feeds import feed_token_of, feed_token_user
from dashboard.models import FeedToken
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_admin_lists_feed_addresses_without_their_secrets_and_deletes_them(
    admin_client: Any,
) -> None:
    reader = make_user("reader")
    token = feed_token_of(user=reader)
    row = FeedToken.objects.get(user=reader)
    listing = admin_client.get("/admin/dashboard/feedtoken/").content.decode()
    assert "reader" in listing
    page = admin_client.get(f"/admin/dashboard/feedtoken/{row.pk}/change/").content.decode()
    for secret in (token, row.nonce, row.digest):
        assert secret not in listing
        assert secret not in page
    assert admin_client.get("/admin/dashboard/feedtoken/add/").status_code == 403
    answer = admin_client.post(f"/admin/dashboard/feedtoken/{row.pk}/delete/", {"post": "yes"})
    assert answer.status_code == 302
    assert feed_token_user(token=token) is None  # the old address reads nothing any more
