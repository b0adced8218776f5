"""A small REST client for scripts and tests: bearer token, JSON, errors that show the server's
message, and waiting on jobs with a deadline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests


class ApiError(RuntimeError):
    """A non-2xx answer; the message holds the method, path, status and the server's error."""

    def __init__(self, response: requests.Response) -> None:
        try:
            body: Any = response.json()
        except ValueError:
            body = response.text[:500]
        self.status_code = response.status_code
        self.body = body
        super().__init__(f"{response.request.method} {response.request.path_url} -> "
                         f"{response.status_code}: {body}")


class Client:
    def __init__(self, base_url: str, token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, *, expect: tuple[int, ...] = (200, 201, 202, 204),
                **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", 120)
        response = self.session.request(method, self.base_url + path, **kwargs)
        if response.status_code not in expect:
            raise ApiError(response)
        if response.status_code == 204 or not response.content:
            return None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.content

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("POST", path, json=json, **kwargs)

    def put(self, path: str, json: Any = None, **kwargs: Any) -> Any:
        return self.request("PUT", path, json=json, **kwargs)

    def upload(self, path: str, files: list[Path], **fields: str) -> Any:
        handles = [("files", (f.name, open(f, "rb"))) for f in files]
        try:
            return self.post(path, files=handles, data=fields)
        finally:
            for _, (_, handle) in handles:
                handle.close()

    def wait_job(self, path: str, *, timeout_s: float, terminal: tuple[str, ...] = (
            "SUCCEEDED", "FAILED", "CANCELLED"), on_poll: Any = None) -> dict[str, Any]:
        """Poll ``path`` until its ``status`` is terminal; TimeoutError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = self.get(path)
            if on_poll:
                on_poll(job)
            if job["status"] in terminal:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} still {job['status']} after {timeout_s:.0f} s")
            time.sleep(0.5)
