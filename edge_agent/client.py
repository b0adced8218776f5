"""HTTP client for the control plane's device API (``/api/device/v1/``, contracts.md).

Errors are split the way the convergence loop needs them: :class:`RetryableError` (network
failures, timeouts, 408/429/5xx: back off and try again) and :class:`TerminalError` (any other
4xx, a malformed reply: retrying the same request cannot help).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
import urllib3

__all__ = ["Cancelled", "DeviceApiError", "DeviceClient", "RetryableError", "TerminalError",
           "enroll"]

API_PREFIX = "/api/device/v1/"
#: (connect, read) timeouts in seconds for every call.
TIMEOUT_S = (5.0, 30.0)
_CHUNK = 64 * 1024
#: a download attempt gets ``MIN_RATE_GRACE_S`` plus its remaining bytes at this rate; past
#: that it is cut and resumed later (Range): a server or link that drips a byte now and then,
#: always within the read timeout, would otherwise hold the apply thread for ever
MIN_RATE_BYTES_PER_S = 16 * 1024
MIN_RATE_GRACE_S = 60.0
_RETRYABLE_STATUS = frozenset({408, 425, 429})


class DeviceApiError(Exception):
    """A device API call failed. ``str(error)`` says why; ``status`` is the HTTP status when
    the platform answered with one (None: no answer, or a malformed one)."""

    retryable = False

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RetryableError(DeviceApiError):
    """Network failure, timeout or a status that may succeed later (408, 425, 429, 5xx)."""

    retryable = True


class TerminalError(DeviceApiError):
    """A status or reply that the same request will get again (401, 403, 404, 400, bad JSON)."""


class Cancelled(DeviceApiError):
    """The caller's ``should_stop()`` turned True during a download (the partial file is kept
    for a later resume)."""


def api_url(server_url: str, path: str) -> str:
    """``http://host:port`` (with or without a trailing path slash) + ``heartbeat`` -> full URL."""
    return urljoin(server_url.rstrip("/") + "/", API_PREFIX.lstrip("/") + path)


def _message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict):
        for key in ("detail", "error", "message"):
            if key in body:
                return str(body[key])
    return str(body)[:200]


def _raise_for_status(response: requests.Response, what: str) -> None:
    status = response.status_code
    if status < 400:
        return
    text = f"{what}: HTTP {status}: {_message(response)}"
    if status >= 500 or status in _RETRYABLE_STATUS:
        raise RetryableError(text, status)
    raise TerminalError(text, status)


def _json(response: requests.Response, what: str) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError as error:
        raise TerminalError(f"{what}: reply is not JSON") from error
    if not isinstance(body, dict):
        raise TerminalError(f"{what}: reply is not a JSON object")
    return body


def enroll(server_url: str, token: str, name: str, info: dict[str, Any],
           machine_id: str = "", re_enroll: bool = False) -> dict[str, Any]:
    """``POST enroll`` -> ``{"device_id", "credential", "heartbeat_interval_s",
    "signing_public_key", "re_enrolled"}``. ``machine_id`` (32-64 hex digits, may be empty)
    with ``name`` lets the platform recognise a re-enrollment of the same device, done only
    with ``re_enroll`` (else a 409 names the device).

    Raises:
        RetryableError: the server cannot be reached or answers 5xx.
        TerminalError: the token is refused (401/400) or the reply lacks a field.
    """
    url = api_url(server_url, "enroll")
    try:
        response = requests.post(
            url, json={"token": token, "name": name, "info": info, "machine_id": machine_id,
                       "re_enroll": re_enroll},
            timeout=TIMEOUT_S,
        )
    except requests.RequestException as error:
        raise RetryableError(f"enroll: cannot reach {url}: {error}") from error
    _raise_for_status(response, "enroll")
    body = _json(response, "enroll")
    missing = {"device_id", "credential", "signing_public_key"} - set(body)
    if missing:
        raise TerminalError(f"enroll: reply lacks {sorted(missing)}")
    return body


class DeviceClient:
    """Authenticated device API calls (``Authorization: Device <credential>``).

    The credential is only sent to the control plane's own origin: an artifact URL on another
    host (object storage, a CDN) is fetched without it.
    """

    def __init__(self, server_url: str, credential: str) -> None:
        self.server_url = server_url.rstrip("/") + "/"
        self._origin = urlsplit(self.server_url)[:2]
        self._credential = credential
        self._session = requests.Session()

    def close(self) -> None:
        self._session.close()

    def resolve(self, url: str) -> str:
        """An absolute URL, or one relative to the server URL, made absolute."""
        return urljoin(self.server_url, url)

    def _headers(self, url: str) -> dict[str, str]:
        if urlsplit(url)[:2] == self._origin:
            return {"Authorization": f"Device {self._credential}"}
        return {}

    def _get(self, url: str, what: str, headers: dict[str, str], stream: bool) -> requests.Response:
        url = self.resolve(url)
        try:
            response = self._session.get(
                url, headers={**self._headers(url), **headers}, timeout=TIMEOUT_S, stream=stream
            )
        except requests.RequestException as error:
            raise RetryableError(f"{what}: {error}") from error
        if response.status_code >= 400:
            response.close()
        _raise_for_status(response, what)
        return response

    def heartbeat(self, payload: dict[str, Any]) -> dict[str, Any]:
        """``POST heartbeat`` -> ``{"heartbeat_interval_s", "desired"}``. Raises DeviceApiError."""
        url = api_url(self.server_url, "heartbeat")
        try:
            response = self._session.post(
                url, json=payload, headers=self._headers(url), timeout=TIMEOUT_S
            )
        except requests.RequestException as error:
            raise RetryableError(f"heartbeat: {error}") from error
        _raise_for_status(response, "heartbeat")
        return _json(response, "heartbeat")

    def report_benchmark(self, benchmark_id: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST benchmarks/<id>/result`` -> ``{"status"}`` (the stored status).

        Raises DeviceApiError (TerminalError 404: not this device's, or unknown)."""
        url = api_url(self.server_url, f"benchmarks/{benchmark_id}/result")
        try:
            response = self._session.post(
                url, json=body, headers=self._headers(url), timeout=TIMEOUT_S
            )
        except requests.RequestException as error:
            raise RetryableError(f"benchmark result: {error}") from error
        _raise_for_status(response, "benchmark result")
        return _json(response, "benchmark result")

    def get_bytes(self, url: str, what: str, max_bytes: int) -> bytes:
        """GET a small file whole (a benchmark input image). Raises DeviceApiError
        (TerminalError when it is larger than ``max_bytes``)."""
        response = self._get(url, what, {}, stream=True)
        chunks, total = [], 0
        with response:
            try:
                for chunk in response.iter_content(_CHUNK):
                    total += len(chunk)
                    if total > max_bytes:
                        raise TerminalError(f"{what}: larger than {max_bytes} bytes")
                    chunks.append(chunk)
            except requests.RequestException as error:
                raise RetryableError(f"{what}: interrupted: {error}") from error
        return b"".join(chunks)

    def get_json(self, url: str, what: str) -> dict[str, Any]:
        """GET a JSON object (the manifest). Raises DeviceApiError."""
        return _json(self._get(url, what, {}, stream=False), what)

    def download(self, url: str, destination: Path, expected_size: int,
                 should_stop: Callable[[], bool] | None = None) -> None:
        """Download ``url`` into ``destination``, resuming a partial file with HTTP Range.

        A partial ``destination`` from an earlier attempt is continued with
        ``Range: bytes=<size>-``; a server that answers 200 instead of 206 restarts it.
        ``expected_size`` is in bytes; checksums are checked by the caller. ``should_stop`` is
        asked after every 64 KiB chunk. An attempt slower than ``MIN_RATE_BYTES_PER_S`` on
        the whole (after ``MIN_RATE_GRACE_S``) is cut at its deadline.

        Raises:
            RetryableError: network failure, 5xx, the transfer stopped early, or it passed its
                deadline (the partial file is kept for the next attempt).
            TerminalError: 4xx, or the server sends more than ``expected_size`` bytes.
            Cancelled: ``should_stop()`` turned True (the partial file is kept).
        """
        offset = destination.stat().st_size if destination.exists() else 0
        if offset > expected_size:
            destination.unlink()
            offset = 0
        if offset == expected_size and expected_size > 0:
            return
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        deadline = time.monotonic() + MIN_RATE_GRACE_S + (expected_size - offset) / \
            MIN_RATE_BYTES_PER_S
        response = self._get(url, "download", headers, stream=True)
        with response:  # closing it closes the connection: no unread bytes reach the next call
            if response.status_code == 206:
                content_range = response.headers.get("Content-Range", "")
                if not content_range.startswith(f"bytes {offset}-"):
                    destination.unlink(missing_ok=True)
                    raise RetryableError(f"download: unexpected Content-Range {content_range!r}")
                mode = "ab"
            else:
                offset, mode = 0, "wb"
            written = offset
            try:
                with open(destination, mode) as handle:
                    while True:
                        if should_stop is not None and should_stop():
                            raise Cancelled(f"download stopped at {written} bytes")
                        # read1: whatever has arrived (up to a chunk), so the deadline is
                        # checked as bytes trickle in, not only once a whole chunk is there
                        chunk = response.raw.read1(_CHUNK, decode_content=True)
                        if not chunk:
                            break
                        written += len(chunk)
                        if written > expected_size:
                            raise TerminalError(
                                f"download: artifact larger than the expected {expected_size} bytes"
                            )
                        handle.write(chunk)
                        if time.monotonic() > deadline and written < expected_size:
                            raise RetryableError(
                                f"download too slow: {written} of {expected_size} bytes by its "
                                "deadline (resumed later)")
            except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
                raise RetryableError(f"download interrupted at {written} bytes: {error}") from error
        if written != expected_size:
            raise RetryableError(f"download incomplete: {written} of {expected_size} bytes")
