"""Exporting a dataset version as a zip download (COCO, Pascal VOC, YOLO, ImageNet folders).

The zip is written while it is sent (``formats.export``, ``formats.zipstream``): a version of
several GiB never sits in memory or on disk. Its rows are read before the first byte goes out,
so the stream itself touches no database; the images come from ``sampan.core.storage`` (local
files or the bucket).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import IO, Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.utils.translation import gettext as _

from sampan.core import storage as shared_storage
from sampan.core.disposition import content_disposition
from sampan.core.errors import ValidationFailed
from sampan.datasets.formats.export import (FORMATS_BY_TASK, ExportInfo, ExportItem,
                                            export_chunks, folder_name_problem)
from sampan.datasets.models import DatasetVersion, DatasetVersionItem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VersionExport:
    """An export ready to stream: the download's ``filename`` and the zip's ``chunks``."""

    filename: str
    chunks: Iterator[bytes]


def _open_sample(name: str) -> tuple[IO[bytes], int | None]:
    handle = shared_storage.files().open(name, "rb")
    try:
        size: int | None = int(handle.size)
    except (AttributeError, OSError, TypeError, ValueError):
        size = None
    return handle, size


def dataset_version_export(*, version: DatasetVersion, export_format: str | None = None
                           ) -> VersionExport:
    """The zip of ``version`` in ``export_format`` (``coco`` | ``voc`` | ``yolo`` for object
    detection, ``imagenet`` for image classification, ``csv`` for text classification; None:
    the task's first).

    Raises ValidationFailed (field ``format``) for a format that does not fit the version's
    task, and for ``imagenet`` when a class name cannot be a folder name (``a/b``, ``.x``).
    """
    allowed = FORMATS_BY_TASK.get(version.task_type, ())
    chosen = export_format or (allowed[0] if allowed else "")
    if chosen not in allowed:
        raise ValidationFailed(
            _("format %(format)r does not fit this %(task_type)s version: use %(allowed)s")
            % {"format": chosen, "task_type": version.task_type,
               "allowed": _(" or ").join(allowed)}, field="format")
    labels = list(version.labels)
    if chosen == "csv":
        from sampan.datasets.text_export import text_version_chunks

        stem = f"{version.dataset.name}-v{version.number}"
        return VersionExport(filename=f"{stem}-csv.zip", chunks=_logged(
            text_version_chunks(version, f"{stem}.csv"), version))
    if chosen == "imagenet":
        for label in labels:
            problem = folder_name_problem(label)
            if problem:
                raise ValidationFailed(_("class %(name)r %(problem)s: it cannot be a folder of "
                                         "the imagenet layout")
                                       % {"name": label, "problem": _(problem)}, field="format")
    rows = (DatasetVersionItem.objects.filter(version=version)
            .order_by("split", "sample__content_sha256")
            .values_list("sample__file", "sample__original_name", "sample__content_sha256",
                         "sample__width", "sample__height", "split", "class_index", "boxes"))
    items = [ExportItem(*row[:7], boxes=list(row[7] or [])) for row in rows]
    info = ExportInfo(dataset=version.dataset.name, version=version.number,
                      task_type=version.task_type, labels=labels, digest=version.digest,
                      format=chosen)
    return VersionExport(filename=f"{version.dataset.name}-v{version.number}-{chosen}.zip",
                         chunks=_logged(export_chunks(info, items, _open_sample), version))


def _logged(chunks: Iterator[bytes], version: DatasetVersion) -> Iterator[bytes]:
    """The chunks; an error after the headers went out can only cut the download short, so it
    is logged here with the version it belongs to."""
    try:
        yield from chunks
    except Exception:
        log.exception("export of dataset version %s failed while streaming", version.pk)
        raise


async def _async_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The chunks of a synchronous generator, each produced in a worker thread: under ASGI,
    Django consumes a synchronous iterator WHOLE before sending it (``StreamingHttpResponse.
    __aiter__``), which would hold the entire zip in memory."""
    end = object()
    try:
        while True:
            chunk = await sync_to_async(next, thread_sensitive=False)(chunks, end)
            if chunk is end:
                return
            yield chunk  # type: ignore[misc]
    finally:
        await sync_to_async(chunks.close, thread_sensitive=False)()  # type: ignore[attr-defined]


def zip_download(request: Any, export: VersionExport) -> StreamingHttpResponse:
    """A ``200 application/zip`` attachment streaming ``export`` (no Content-Length: the size
    is known at the end). ``request``: the DRF or Django request (ASGI or not)."""
    django_request = getattr(request, "_request", request)
    content: Any = export.chunks
    if isinstance(django_request, ASGIRequest):
        content = _async_chunks(export.chunks)
    response = StreamingHttpResponse(content, content_type="application/zip")
    response["Content-Disposition"] = content_disposition(export.filename, default="dataset")
    response["Cache-Control"] = "private, no-store"
    response["X-Content-Type-Options"] = "nosniff"
    return response
