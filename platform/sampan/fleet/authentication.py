"""``Authorization: Device <credential>`` for the device API (``/api/device/v1/``).

Devices are not users: a successful authentication leaves ``request.user`` anonymous and puts
the ``Device`` in ``request.auth``; device views use :class:`IsEnrolledDevice` instead of the user
permission classes. No session and no CSRF are involved (DRF views are CSRF-exempt unless
SessionAuthentication runs).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.utils.translation import gettext as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from sampan.fleet.models import Device, secret_sha256


class DeviceCredentialAuthentication(authentication.BaseAuthentication):
    keyword = "Device"

    def authenticate(self, request: Any) -> tuple[AnonymousUser, Device] | None:
        parts = authentication.get_authorization_header(request).decode("latin-1").split()
        if not parts or parts[0] != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                _("malformed Authorization header; expected 'Device <credential>'"))
        device = Device.objects.filter(credential_sha256=secret_sha256(parts[1])).first()
        if device is None:
            raise exceptions.AuthenticationFailed(
                _("unknown device credential (was the device deleted? enroll it again)"))
        return AnonymousUser(), device

    def authenticate_header(self, request: Any) -> str:
        return self.keyword


class IsEnrolledDevice(permissions.BasePermission):
    """The request carries a valid device credential."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return isinstance(request.auth, Device)


class DeviceCredentialScheme(OpenApiAuthenticationExtension):
    """OpenAPI description of the device credential (registered by being defined)."""

    target_class = "sampan.fleet.authentication.DeviceCredentialAuthentication"
    name = "deviceCredential"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Device <credential>`, the credential returned by enroll."}
