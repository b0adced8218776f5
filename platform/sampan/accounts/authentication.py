"""``Authorization: Bearer <token>`` with personal API tokens (only their sha256 is stored)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _
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
            raise exceptions.AuthenticationFailed(_("invalid or revoked API token"))
        now = timezone.now()
        if token.expires_at is not None and token.expires_at <= now:
            raise exceptions.AuthenticationFailed(
                _("this API token expired at %(expired_at)s: create a new one")
                % {"expired_at": token.expires_at.isoformat(timespec="seconds")})
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword


class SessionAuthentication(authentication.SessionAuthentication):
    """DRF's session authentication with its CSRF refusal in the request's language (DRF writes
    ``CSRF Failed: <Django's reason>`` untranslated; the reason itself stays Django's)."""

    def enforce_csrf(self, request: Any) -> None:
        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied as error:
            reason = str(error.detail).removeprefix("CSRF Failed: ")
            raise exceptions.PermissionDenied(
                _("CSRF Failed: %(reason)s") % {"reason": reason}) from None
