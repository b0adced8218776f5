"""Resumable uploads (the tus protocol, ``sampan.uploads.tus``): one row per upload.

The bytes live in ``SAMPAN_DATA_DIR/uploads/<id>.part`` on the web host that receives them
(``selectors.upload_path``) until an import takes them into the shared storage; while an
upload is receiving, the size of that file is the truth for its offset (``offset`` here is the
value at the end of the last PATCH, for listings).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sampan.core.models import BaseModel


class UploadStatus(models.TextChoices):
    RECEIVING = "receiving"  # fewer than ``length`` bytes have arrived
    COMPLETE = "complete"  # every byte arrived; waiting to be used (an import)
    CONSUMED = "consumed"  # handed to an import; the file has moved to the import's staging


class Upload(BaseModel):
    """One resumable upload of ``length`` bytes by ``owner``; only the owner may see or use it."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                              related_name="uploads")
    length = models.BigIntegerField(help_text="Upload-Length, bytes")
    offset = models.BigIntegerField(default=0, help_text="bytes received, bytes")
    filename = models.CharField(max_length=500, blank=True, default="")
    filetype = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=16, choices=UploadStatus.choices,
                              default=UploadStatus.RECEIVING, db_index=True)
    expires_at = models.DateTimeField(db_index=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(length__gte=0),
                                   name="upload_length_not_negative"),
            models.CheckConstraint(condition=models.Q(offset__gte=0)
                                   & models.Q(offset__lte=models.F("length")),
                                   name="upload_offset_within_length"),
        ]
