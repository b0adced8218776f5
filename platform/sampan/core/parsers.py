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
