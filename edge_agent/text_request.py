"""The agent's text requests, one rule for the agent and the platform's try-it
(docs/contracts.md, "Agent HTTP API"): what :class:`edge_agent.text_session.TextClassifierSession`
answers and what the platform's try-it reads.

The agent's ``POST /v1/predict`` for a text model takes JSON ``{"text": "..."}`` or
``{"texts": ["...", ...]}`` (at most :data:`MAX_TEXTS`): :func:`parse_text_body` reads it.
:class:`WrongInputError` says that an image was sent to a text model, or JSON to an image model,
and what the model being served expects.

Text input (:func:`text_input`; both sides call it, so the same text gets the same answer or the
same refusal on either):

- bytes must be UTF-8 (a byte order mark allowed): bytes that are not are refused, never read
  as U+FFFD (``not_utf8``: the byte and its offset); in a JSON body the text's own bytes are
  looked at (:func:`load_text_request`), so the refusal names the field;
- a lone surrogate (JSON's ``"\\ud800"``, no character) is refused (``surrogate``);
- NUL characters (U+0000) are removed: they carry nothing in a text (UTF-16 read as bytes is
  full of them) and BERT's cleaning drops them too;
- a text with nothing but whitespace, byte order marks and NULs is refused (``empty``), an
  empty one too;
- any length is taken: the model reads its start (``text.max_chars`` characters or
  ``max_tokens`` tokens) and the answer says ``truncated``; the body's own limit (32 MiB on the
  agent and on the platform) bounds it.

``top_k`` (:func:`parse_top_k`, :func:`request_top_k`): from the query string and/or a JSON
body, an integer (or a string of digits) >= 1, any size (an answer lists at most every label),
absent or ``null``: :data:`DEFAULT_TOP_K`; both given and different: refused.

Standard library only: the agent's dependencies stay small.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["DEFAULT_TOP_K", "MAX_TEXTS", "TextInputError", "TextRequestError", "TopKError",
           "WrongInputError", "image_model_got", "json_type", "load_text_request",
           "parse_text_body", "parse_top_k", "request_top_k", "text_input", "text_request"]

#: The classes an answer lists when the request names no ``top_k``.
DEFAULT_TOP_K = 5
#: Most texts one ``POST /v1/predict`` may carry (``{"texts": [...]}``).
MAX_TEXTS = 256
#: What a text model expects, in the errors that say it.
_EXPECTS = ('this model classifies text (text_classification): send JSON {"text": "..."} or '
            '{"texts": ["...", ...]}')
_SURROGATE = re.compile("[\ud800-\udfff]")
_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
               int: "a number", float: "a number", type(None): "null"}


class WrongInputError(ValueError):
    """The body is not what the model being served takes: an image sent to a text model, JSON
    sent to an image model. ``str(error)`` says what it expects (the HTTP API answers 400)."""


class TextInputError(ValueError):
    """A text a text model does not take (:func:`text_input`). ``str(error)`` is the reason in
    English, naming the field (``"text"``, ``"texts[3]"``); ``kind`` (``not_string``,
    ``not_utf8``, ``surrogate``, ``empty``), ``field`` and ``params`` say it for a caller that
    words it in another language (the platform's try-it)."""

    def __init__(self, message: str, kind: str, field: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.field = field
        self.params = params


class TextRequestError(ValueError):
    """A text request's body that is not a JSON object (:func:`load_text_request`).
    ``str(error)`` is the agent's reason in English; ``kind`` (``empty``, ``not_utf8``:
    ``byte``, ``offset``; ``not_json``: ``error``; ``too_deep``; ``not_object``: ``type``) and
    ``params`` say it for a caller that words it in another language (the platform's try-it)."""

    def __init__(self, message: str, kind: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


class TopKError(ValueError):
    """A ``top_k`` that is not valid (:func:`parse_top_k`, :func:`request_top_k`): ``kind``
    ``not_integer``, ``below_one`` or ``conflict`` (``query``, ``body``); ``str(error)`` is the
    reason in English, the same on the agent and the platform's try-it."""

    def __init__(self, message: str, kind: str, **params: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.params = params


_TOP_K_DIGITS = re.compile(r"\s*\+?[0-9]+\s*")


def parse_top_k(value: object) -> int | None:
    """A ``top_k`` as a request gives it, by one rule on the agent and the platform's try-it,
    from the query string (a string) or a JSON body: None (absent, or JSON ``null``) -> None,
    the default; an integer or a string of decimal digits -> that integer, which must be >= 1;
    any number is taken (an answer lists at most every label).

    Raises:
        TopKError: not an integer (a boolean, a fraction, another string: ``top_k must be an
            integer``), below 1 (``top_k must be >= 1``).
    """
    if value is None:
        return None
    if isinstance(value, str) and _TOP_K_DIGITS.fullmatch(value) and len(value) <= 4000:
        value = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*-[0-9]+\s*", value):
        raise TopKError("top_k must be >= 1", "below_one")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TopKError("top_k must be an integer", "not_integer")
    if value < 1:
        raise TopKError("top_k must be >= 1", "below_one")
    return value


def request_top_k(query: int | None, body: int | None) -> int:
    """The ``top_k`` of a request that may give it in its query string and in its body (both
    read by :func:`parse_top_k`): the one given, :data:`DEFAULT_TOP_K` when neither is.

    Raises:
        TopKError: both are given and differ (``conflict``).
    """
    if query is not None and body is not None and query != body:
        raise TopKError(f"top_k is {query} in the query string and {body} in the body: give "
                        "it once", "conflict", query=query, body=body)
    found = query if query is not None else body
    return DEFAULT_TOP_K if found is None else found


#: U+DC80..U+DCFF: where ``surrogateescape`` puts a byte that is not UTF-8.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
#: What a text may hold and still be empty: whitespace, byte order marks and NULs.
_NOTHING = str.maketrans("", "", "\ufeff\x00")


def text_input(value: object, field: str = "text") -> str:
    """A text sent to a text model, checked and normalised by the one rule of the agent and
    the platform (module docstring, "Text input"): ``bytes`` decoded as UTF-8 (a byte order
    mark allowed), NUL characters removed. ``field`` names the text in messages.

    Raises:
        TextInputError: ``value`` is not a string nor bytes (``not_string``: ``type``); bytes
            that are not UTF-8 (``not_utf8``: ``byte``, ``offset``); a lone surrogate
            (``surrogate``: ``code``, ``index``); nothing but whitespace (``empty``).
    """
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            byte = value[error.start]
            raise TextInputError(f'"{field}" is not valid UTF-8 (byte 0x{byte:02x} at offset '
                                 f"{error.start})", "not_utf8", field, byte=byte,
                                 offset=error.start) from None
    if not isinstance(value, str):
        raise TextInputError(f'"{field}" must be a string, not {json_type(value)}',
                             "not_string", field, type=json_type(value))
    found = _SURROGATE.search(value)
    if found:
        raise TextInputError(f'"{field}" is not valid Unicode: a lone surrogate '
                             f"U+{ord(found.group()):04X} at character {found.start()}",
                             "surrogate", field, code=ord(found.group()), index=found.start())
    text = value.replace("\x00", "")
    if not text.translate(_NOTHING).strip():
        raise TextInputError(f'"{field}" is empty: nothing is left after removing whitespace',
                             "empty", field)
    return text


def json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def image_model_got(task: str, data: bytes) -> WrongInputError | None:
    """For an image model (``task``) that could not decode ``data``: the error to answer
    instead when ``data`` is a JSON object or array (a text request) or a multipart form (what
    ``curl -F file=@x.png`` sends: the agent takes the image's bytes as the body), else None."""
    head = data[:64].lstrip()
    if head.startswith(b"--") and b"content-disposition: form-data" in data[:4096].lower():
        return WrongInputError(f"this model takes an image ({task}): send the image's bytes as "
                               "the body (curl --data-binary @image.jpg), not a multipart form")
    if not head.startswith((b"{", b"[")):
        return None
    try:
        json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError included; nested too deeply
        return None
    return WrongInputError(f"this model takes an image ({task}): send the image's bytes as the "
                           "body, not JSON")


def _not_json(data: bytes, problem: TextRequestError) -> WrongInputError | TextRequestError:
    """A body a text model cannot read: an image (say so), or ``problem``."""
    from edge_agent.imaging import ImageDecodeError, sniff_format

    try:
        fmt = sniff_format(data)
    except ImageDecodeError:
        return TextRequestError(f"{problem}; {_EXPECTS}", problem.kind, **problem.params)
    return WrongInputError(f"{_EXPECTS}, not a {fmt} image")


def load_text_request(data: bytes) -> dict[str, Any]:
    """The JSON object of a text request's body (UTF-8, a byte order mark allowed). When the
    body is not UTF-8 but is JSON once its stray bytes are kept aside (``surrogateescape``), a
    string of ``text`` or ``texts`` holding them comes back as its bytes, for
    :func:`text_input` to refuse naming that field; the other keys are left as they are.

    Raises:
        WrongInputError: the body is an image.
        TextRequestError: the body is empty, not JSON (or not UTF-8 outside those strings),
            nested too deeply, not an object.
    """
    if not data:
        raise TextRequestError(f"the body is empty; {_EXPECTS}", "empty")
    escaped, problem = False, None
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = TextRequestError(f"the body is not UTF-8 (byte 0x{data[error.start]:02x} at "
                                   f"offset {error.start})", "not_utf8",
                                   byte=data[error.start], offset=error.start)
        decoded, escaped = data.decode("utf-8", "surrogateescape"), True
    try:
        body = json.loads(decoded.removeprefix("\ufeff"))
    except ValueError as error:
        raise _not_json(data, problem or TextRequestError(
            f"the body is not JSON ({error})", "not_json", error=str(error))) from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise TextRequestError(f"the body is not JSON this agent reads (nested too deeply); "
                               f"{_EXPECTS}", "too_deep") from None
    if not isinstance(body, dict):
        raise TextRequestError(f"the body must be a JSON object, not {json_type(body)}; "
                               f"{_EXPECTS}", "not_object", type=json_type(body))
    if escaped:
        for key in ("text", "texts"):
            value = body.get(key)
            if isinstance(value, str):
                body[key] = _as_sent(value)
            elif isinstance(value, list):
                body[key] = [_as_sent(item) if isinstance(item, str) else item
                             for item in value]
    return body


def _as_sent(value: str) -> str | bytes:
    """A string of a body decoded with ``surrogateescape``: its bytes when it holds a byte
    that is not UTF-8 (and nothing JSON escaped as a lone surrogate outside that range)."""
    if not _ESCAPED_BYTE.search(value):
        return value
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value


def parse_text_body(data: bytes) -> tuple[list[str], bool]:
    """The texts of a text model's request body: ``({"text": t} -> ([t], False)``, ``{"texts":
    [...]} -> (texts, True)``, each through :func:`text_input`. Other keys are ignored. A UTF-8
    byte order mark is allowed. Raises as :func:`text_request`."""
    texts, batch, _top_k = text_request(data)
    return texts, batch


def text_request(data: bytes) -> tuple[list[str], bool, int | None]:
    """A text model's request body -> ``(texts, batch, top_k)``: the texts as
    :func:`parse_text_body` reads them and the body's ``top_k`` (:func:`parse_top_k`; None
    when it gives none). Other keys are ignored. A UTF-8 byte order mark is allowed.

    Raises:
        WrongInputError: the body is an image.
        ValueError: the body is empty, not UTF-8 JSON, not an object; it has neither or both
            of ``text`` and ``texts``; ``texts`` is not a list of 1 to :data:`MAX_TEXTS`
            items. :class:`TextInputError` (a ValueError): a text :func:`text_input` refuses
            (not a string, not UTF-8, a lone surrogate, empty). The message names the field.
            :class:`TopKError` (a ValueError): the body's ``top_k`` is not valid.
    """
    body = load_text_request(data)
    top_k = parse_top_k(body.get("top_k"))
    if "text" in body and "texts" in body:
        raise ValueError('give "text" (one text) or "texts" (a list), not both')
    if "text" in body:
        texts, batch, names = [body["text"]], False, ["text"]
    elif "texts" in body:
        texts, batch = body["texts"], True
        if not isinstance(texts, list):
            raise ValueError(f'"texts" must be a list of strings, not {json_type(texts)}')
        if not 1 <= len(texts) <= MAX_TEXTS:
            raise ValueError(f'"texts" holds {len(texts)} texts: give 1 to {MAX_TEXTS} per '
                             "request")
        names = [f"texts[{index}]" for index in range(len(texts))]
    else:
        raise ValueError(f'the body has no "text"; {_EXPECTS}')
    return ([text_input(text, name) for name, text in zip(names, texts, strict=True)], batch,
            top_k)
