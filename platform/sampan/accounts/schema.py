"""OpenAPI description of the personal API token authentication."""

from typing import Any

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "sampan.accounts.authentication.BearerTokenAuthentication"
    name = "apiToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer",
                "description": "A personal API token: `Authorization: Bearer spn_...`"}


class SessionCookieScheme(SessionScheme):  # type: ignore[misc]
    """The console's session (``sampan.accounts.authentication.SessionAuthentication``: DRF's,
    with its CSRF refusal translated), described as drf-spectacular describes DRF's."""

    target_class = "sampan.accounts.authentication.SessionAuthentication"
