"""Writes for resumable uploads: create, record progress, terminate, expire, hand to an import.

The protocol itself (headers, streaming the bytes to disk) is ``sampan.uploads.tus``.
"""

from __future__ import annotations

import base64
import binascii
import logging
import unicodedata
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from sampan.core import storage
from sampan.core.errors import ApplicationError, Conflict, NotFound, ValidationFailed
from sampan.uploads.models import Upload, UploadStatus
from sampan.uploads.selectors import upload_get_for, upload_path

log = logging.getLogger(__name__)

MAX_FILENAME_CHARS = 500  # Upload.filename max_length


class TooLarge(ApplicationError):
    """A body or an upload above a configured limit (HTTP 413); ``details.limit_bytes``.
    ``what`` (e.g. ``_("an upload of %(length)d bytes") % ...``): pass it translated."""

    status_code = 413
    code = "too_large"

    def __init__(self, what: str, limit: int, *, field: str | None = None) -> None:
        super().__init__(_("%(what)s is too large: the limit is %(limit)d bytes")
                         % {"what": what, "limit": limit}, field=field,
                         details={"limit_bytes": limit})


def parse_metadata(header: str | None) -> dict[str, str]:
    """The tus ``Upload-Metadata`` header: comma-separated ``key base64(value)`` pairs (a key
    alone means an empty value). Values are UTF-8. Raises ValidationFailed naming the pair.
    Source: tus 1.0.0, "Upload-Metadata"
    (https://tus.io/protocols/resumable-upload#upload-metadata).
    """
    result: dict[str, str] = {}
    for pair in (header or "").split(","):
        pair = pair.strip()
        if not pair:
            continue
        key, _sep, encoded = pair.partition(" ")
        try:
            value = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValidationFailed(_("Upload-Metadata: the value of %(key)r is not base64 of "
                                     "UTF-8 text") % {"key": key},
                                   field="Upload-Metadata") from None
        result[key] = value
    return result


def _clean_name(value: str, field: str) -> str:
    value = unicodedata.normalize("NFC", value).strip()
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise ValidationFailed(_("Upload-Metadata %(field)s: %(value)r contains control "
                                 "characters") % {"field": field, "value": value[:40]},
                               field="Upload-Metadata")
    if len(value) > MAX_FILENAME_CHARS:
        raise ValidationFailed(_("Upload-Metadata %(field)s: longer than %(limit)d characters")
                               % {"field": field, "limit": MAX_FILENAME_CHARS},
                               field="Upload-Metadata")
    return value


def _expiry() -> Any:
    return timezone.now() + timedelta(seconds=settings.SAMPAN_UPLOAD_EXPIRE_S)


def upload_create(*, owner: Any, length: int, metadata: dict[str, str]) -> Upload:
    """A new, empty resumable upload of ``length`` bytes (tus "creation").

    ``metadata``: ``filename`` (or ``name``) and ``filetype`` (or ``type``) are kept, as
    tus-js-client and Uppy send them. Raises TooLarge (413) when ``length`` is above
    ``SAMPAN_UPLOAD_MAX_BYTES``, ValidationFailed for a negative length or a bad name.
    """
    limit = settings.SAMPAN_UPLOAD_MAX_BYTES
    if length < 0:
        raise ValidationFailed(_("Upload-Length must be a number of bytes"),
                               field="Upload-Length")
    if length > limit:
        raise TooLarge(_("an upload of %(length)d bytes") % {"length": length}, limit,
                       field="Upload-Length")
    filename = _clean_name(metadata.get("filename") or metadata.get("name") or "", "filename")
    filetype = _clean_name(metadata.get("filetype") or metadata.get("type") or "",
                           "filetype")[:200]
    with transaction.atomic():
        upload = Upload.objects.create(owner=owner, length=length, filename=filename,
                                       filetype=filetype, expires_at=_expiry())
        upload_path(upload.pk).open("xb").close()
        if length == 0:
            upload_record_progress(upload_id=upload.pk, offset=0)
            upload.refresh_from_db()
    return upload


def upload_record_progress(*, upload_id: Any, offset: int) -> bool:
    """Store the offset reached (bytes) after a PATCH, push the expiry back, and mark the upload
    complete when ``offset`` equals its length. Returns True when the upload is complete."""
    upload = Upload.objects.filter(pk=upload_id, status=UploadStatus.RECEIVING).first()
    if upload is None:
        return False
    complete = offset >= upload.length
    now = timezone.now()
    Upload.objects.filter(pk=upload_id, status=UploadStatus.RECEIVING).update(
        offset=min(offset, upload.length), expires_at=_expiry(), updated_at=now,
        **({"status": UploadStatus.COMPLETE, "completed_at": now} if complete else {}))
    return complete


def upload_delete(*, upload: Upload) -> None:
    """Delete an upload's file and row (tus "termination", and expiry)."""
    upload_path(upload.pk).unlink(missing_ok=True)
    Upload.objects.filter(pk=upload.pk).delete()


def uploads_delete_expired(*, now: Any = None) -> int:
    """Delete every upload past ``expires_at`` (unfinished, or finished and never used), its file
    included. Returns how many were deleted. Run by Celery beat (``uploads.delete_expired``)."""
    now = now or timezone.now()
    count = 0
    for upload in Upload.objects.filter(expires_at__lt=now):
        upload_delete(upload=upload)
        count += 1
    if count:
        log.info("deleted %d expired uploads", count)
    return count


def upload_take(*, owner: Any, upload_id: Any, into: str) -> Upload:
    """Hand the bytes of a COMPLETE upload to its user's import: the file moves to the storage
    name ``into`` of the shared storage (``sampan.core.storage``; local storage on the same file
    system: a rename, whatever its size; the bucket: a streamed multipart upload) and the upload
    becomes CONSUMED, once. Call it inside the caller's transaction: when the move fails, the
    upload stays COMPLETE with its file.

    Raises NotFound for an unknown upload or one of another user (field ``upload_id``),
    Conflict when it is not complete yet (naming the bytes received) or already used,
    StorageUnavailable when the bucket refuses the file.
    """
    upload = upload_get_for(user=owner, upload_id=upload_id)
    if upload is None:
        raise NotFound(_("no upload %(id)s of yours") % {"id": upload_id}, field="upload_id")
    if upload.status == UploadStatus.CONSUMED:
        raise Conflict(_("upload %(id)s was already imported") % {"id": upload_id},
                       field="upload_id")
    if upload.status != UploadStatus.COMPLETE:
        received = upload_path(upload.pk).stat().st_size if upload_path(upload.pk).exists() else 0
        raise Conflict(_("upload %(id)s is not complete: %(received)d of %(length)d bytes "
                         "received") % {"id": upload_id, "received": received,
                                        "length": upload.length},
                       field="upload_id", details={"offset": received, "length": upload.length})
    taken = Upload.objects.filter(pk=upload.pk, status=UploadStatus.COMPLETE).update(
        status=UploadStatus.CONSUMED, updated_at=timezone.now())
    if not taken:
        raise Conflict(_("upload %(id)s was already imported") % {"id": upload_id},
                       field="upload_id")
    storage.save_file(into, upload_path(upload.pk), move=True)
    upload.refresh_from_db()
    return upload
