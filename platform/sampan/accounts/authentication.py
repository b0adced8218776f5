"""``Authorization: Bearer <token>`` with personal API tokens (only their sha256 is stored)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions

from sampan.accounts.models import ApiToken


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header.startswith(self.keyword + " "):
            return None
        secret = header[len(self.keyword) + 1:].strip()
        token = (ApiToken.objects.select_related("user")
                 .filter(token_sha256=ApiToken.digest(secret), revoked_at__isnull=True).first())
        if token is None or not token.user.is_active:
            raise exceptions.AuthenticationFailed("invalid or revoked API token")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
