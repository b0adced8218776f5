"""Request body parsers: DRF's, with a bound on what a body can make the parser do."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser that answers 400 for JSON nested too deeply to parse.

    Python's ``json`` module recurses once per nesting level and raises RecursionError (not a
    ValueError, which DRF turns into a 400) past the interpreter's limit: a 200 KB body of
    ``[[[[...`` gave a 500 on every JSON endpoint (review of issue 9)."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: dict[str, Any] | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(_("JSON parse error - the document is nested too deeply")) from None
        except ParseError as error:  # DRF's "JSON parse error - <json's reason>", untranslated
            reason = str(error.detail).removeprefix("JSON parse error - ")
            raise ParseError(_("JSON parse error - %(reason)s") % {"reason": reason}) from None


class MultiPartParser(parsers.MultiPartParser):
    """DRF's multipart parser with its parse error in the request's language."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: dict[str, Any] | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except ParseError as error:  # DRF's "Multipart form parse error - <Django's reason>"
            prefix = "Multipart form parse error - "
            detail = str(error.detail)
            if not detail.startswith(prefix):
                raise
            raise ParseError(_("Multipart form parse error - %(reason)s")
                             % {"reason": detail.removeprefix(prefix)}) from None
