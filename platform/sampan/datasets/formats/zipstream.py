"""A zip archive produced as a sequence of byte chunks, in bounded memory (stdlib only).

``zipfile`` writes into any object with ``write``; when that object cannot ``tell`` or ``seek``
it writes each entry's sizes and CRC in a data descriptor after the data (APPNOTE 4.3.9) and
the central directory at the end, so nothing already written is ever revisited. The buffer
below hands out what has been written since it was last emptied: at most one read chunk
(``CHUNK_BYTES``) plus a header is held at a time. Zip64 records are added by ``zipfile`` when
the archive passes 4 GiB or 65,535 entries.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import IO

CHUNK_BYTES = 256 * 1024


class _Buffer(io.RawIOBase):
    """A write-only, non-seekable sink whose content is taken out by ``take``."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        chunk = bytes(data)
        self._parts.append(chunk)
        self.size += len(chunk)
        return len(chunk)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        self.size = 0
        return data


class ZipStream:
    """Add entries, taking the bytes written after each step::

        stream = ZipStream()
        yield from stream.add_file("images/a.png", handle)     # ZIP_STORED, read in chunks
        yield from stream.add_bytes("data.yaml", b"...")       # ZIP_DEFLATED
        yield from stream.close()                              # the central directory
    """

    def __init__(self) -> None:
        self._buffer = _Buffer()
        self._zip = zipfile.ZipFile(self._buffer, "w", allowZip64=True)

    def _drain(self) -> Iterator[bytes]:
        if self._buffer.size:
            yield self._buffer.take()

    def add_file(self, name: str, source: IO[bytes], *, size: int | None = None,
                 compress: bool = False) -> Iterator[bytes]:
        """Copy the readable binary ``source`` into the entry ``name``; stored (images are
        compressed already) unless ``compress``. ``size`` (bytes), when known, lets a file over
        2 GiB get its Zip64 header."""
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        info.external_attr = 0o644 << 16
        if size is not None:
            info.file_size = size
        with self._zip.open(info, "w", force_zip64=size is None) as entry:
            while chunk := source.read(CHUNK_BYTES):
                entry.write(chunk)
                yield from self._drain()
        yield from self._drain()

    def add_bytes(self, name: str, data: bytes) -> Iterator[bytes]:
        """The entry ``name`` holding ``data``, deflated."""
        yield from self.add_file(name, io.BytesIO(data), size=len(data), compress=True)

    def close(self) -> Iterator[bytes]:
        """Write the central directory; the stream is complete after this."""
        self._zip.close()
        yield from self._drain()
