"""The name rule of ``sampan.core.names`` for API input (DRF fields) and for services.

Input serializers declare ``NameField`` / ``TextField``; services that create named things call
``validated_name`` too, so callers other than the API (management commands, the demo) keep the
same rule. Both give a 400 whose ``field`` is the input's name.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import serializers

from sampan.core.errors import ValidationFailed
from sampan.core.names import InvalidName, check_text, clean_name

NAME_MAX_CHARS = 200


class NameField(serializers.CharField):
    """A name (sampan.core.names): NFC, trimmed, no control or format characters.

    ``max_length`` defaults to 200 characters, counted on the NFC form.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", NAME_MAX_CHARS)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if value == "" and self.allow_blank:
            return value
        try:
            return clean_name(value)
        except InvalidName as exc:
            raise serializers.ValidationError(str(exc), code="invalid_name") from None


class TextField(serializers.CharField):
    """Free text (descriptions, notes): several lines allowed, other control characters not."""

    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        try:
            return check_text(value)
        except InvalidName as exc:
            raise serializers.ValidationError(str(exc), code="invalid_text") from None


def validated_name(value: str, *, field: str, max_length: int = NAME_MAX_CHARS) -> str:
    """``clean_name(value)`` or ValidationFailed (400) naming ``field``."""
    try:
        return clean_name(value, max_length=max_length)
    except InvalidName as exc:
        raise ValidationFailed(_("%(field)s: %(reason)s") % {"field": field, "reason": exc},
                               field=field) from None


def validated_text(value: str, *, field: str) -> str:
    """``check_text(value)`` or ValidationFailed (400) naming ``field``."""
    try:
        return check_text(value)
    except InvalidName as exc:
        raise ValidationFailed(_("%(field)s: %(reason)s") % {"field": field, "reason": exc},
                               field=field) from None
