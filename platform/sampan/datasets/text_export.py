"""A text classification version as a CSV in a zip: ``text,label,split``, UTF-8 with a
byte-order mark, RFC 4180 quoting (texts with commas, quotes and newlines survive), read back by
the text import as it is. Rows are read from the database in chunks and the CSV is spooled to a
temporary file (in memory up to 8 MiB), so a large version never sits in memory whole."""

from __future__ import annotations

import codecs
import csv
import io
import tempfile
from collections.abc import Iterator

from sampan.datasets.formats.zipstream import ZipStream
from sampan.datasets.models import DatasetVersion, DatasetVersionItem

SPOOL_BYTES = 8 * 1024 * 1024


def text_version_chunks(version: DatasetVersion, name: str) -> Iterator[bytes]:
    """The bytes of the zip holding ``name`` (the version's CSV), chunk by chunk."""
    labels = list(version.labels)
    with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
        spool.write(codecs.BOM_UTF8)
        text = io.TextIOWrapper(spool, encoding="utf-8", newline="")
        writer = csv.writer(text, lineterminator="\r\n")
        writer.writerow(["text", "label", "split"])
        rows = (DatasetVersionItem.objects.filter(version=version)
                .order_by("split", "sample__content_sha256")
                .values_list("sample__text", "class_index", "split"))
        for sample_text, class_index, split in rows.iterator(chunk_size=2000):
            writer.writerow([sample_text, labels[class_index] if class_index is not None
                             else "", split])
        text.flush()
        size = spool.tell()
        spool.seek(0)
        stream = ZipStream()
        yield from stream.add_file(name, text.detach(), size=size, compress=True)
        yield from stream.close()


__all__ = ["text_version_chunks"]
