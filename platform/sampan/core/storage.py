"""Shared files (samples, import staging, model packages, training artifacts) through Django's
storage API, so that no process reads another process's local disk.

``SAMPAN_STORAGE=local`` (dev, ``make run``): ``FileSystemStorage`` under ``MEDIA_ROOT``; every
call here is a file operation on the one disk, writes are atomic (a temporary file renamed into
place) and nothing is copied that can be renamed. ``SAMPAN_STORAGE=s3``: django-storages'
``S3Storage`` on ``SAMPAN_S3_BUCKET``; uploads stream (boto3's multipart upload), downloads stream
to a local file, and browsers and devices fetch big files from presigned URLs
(:func:`download_url`), never through the web process.

Names are storage names: ``/``-separated, relative, no ``..`` (the columns that held
MEDIA_ROOT-relative paths hold them unchanged). Errors of the object store (a missing bucket,
refused credentials, an unreachable endpoint) become :class:`StorageUnavailable` (HTTP 503,
JSON) naming the setting to fix.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages
from django.utils.translation import gettext as _

from sampan.core.errors import ApplicationError

DEFAULT = "default"
#: the storage whose URLs browsers and devices use (the same bucket, signed for the public
#: endpoint ``SAMPAN_S3_PUBLIC_ENDPOINT_URL``)
DOWNLOADS = "downloads"
_CHUNK = 1024 * 1024


class StorageUnavailable(ApplicationError):
    """The object store refused or could not be reached; the message names the setting."""

    status_code = 503
    code = "storage_unavailable"


def files() -> Storage:
    """The storage every process shares (``STORAGES["default"]``)."""
    return storages[DEFAULT]


def is_remote() -> bool:
    """True when files live in the bucket (``SAMPAN_STORAGE=s3``), False for local files."""
    return getattr(settings, "SAMPAN_STORAGE", "local") == "s3"


def _local_path(name: str) -> Path | None:
    """The file's path when the storage is on this disk, else None."""
    if is_remote():
        return None
    try:
        return Path(files().path(name))
    except NotImplementedError:
        return None


def _explain(error: Exception) -> StorageUnavailable | None:
    """A StorageUnavailable naming the setting behind a boto3/botocore error, or None."""
    try:
        from botocore import exceptions as bx
    except ImportError:  # pragma: no cover - local installs without the s3 extra
        return None
    bucket = getattr(settings, "SAMPAN_S3_BUCKET", "")
    endpoint = getattr(settings, "SAMPAN_S3_ENDPOINT_URL", "") or "AWS S3"
    if isinstance(error, bx.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in {"NoSuchBucket"}:
            return StorageUnavailable(
                _("object storage: the bucket %(bucket)r does not exist at %(endpoint)s: check "
                  "SAMPAN_S3_BUCKET (docs/deploy.md, \"Object storage\")")
                % {"bucket": bucket, "endpoint": endpoint}, field="SAMPAN_S3_BUCKET")
        if code in {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied",
                    "InvalidToken", "ExpiredToken", "403", "AuthorizationHeaderMalformed"}:
            return StorageUnavailable(
                _("object storage refused the credentials for bucket %(bucket)r (%(code)s): "
                  "check SAMPAN_S3_ACCESS_KEY_ID and SAMPAN_S3_SECRET_ACCESS_KEY (and "
                  "SAMPAN_S3_REGION)") % {"bucket": bucket, "code": code},
                field="SAMPAN_S3_ACCESS_KEY_ID")
        return None
    if isinstance(error, (bx.EndpointConnectionError, bx.ConnectTimeoutError)):
        return StorageUnavailable(
            _("object storage at %(endpoint)s cannot be reached: check SAMPAN_S3_ENDPOINT_URL "
              "(%(error)s)") % {"endpoint": endpoint, "error": error},
            field="SAMPAN_S3_ENDPOINT_URL")
    if isinstance(error, bx.NoCredentialsError):
        return StorageUnavailable(_("object storage: no credentials: set "
                                    "SAMPAN_S3_ACCESS_KEY_ID and SAMPAN_S3_SECRET_ACCESS_KEY"),
                                  field="SAMPAN_S3_ACCESS_KEY_ID")
    return None


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except ApplicationError:
        raise
    except Exception as error:
        explained = _explain(error)
        if explained is None:
            cause = getattr(error, "__cause__", None) or getattr(error, "__context__", None)
            explained = _explain(cause) if isinstance(cause, Exception) else None
        if explained is not None:
            raise explained from error
        raise


def exists(name: str) -> bool:
    """True when ``name`` is stored. Raises StorageUnavailable."""
    with _translated():
        return files().exists(name)


def size(name: str) -> int:
    """Size of ``name`` in bytes. Raises FileNotFoundError (local) / StorageUnavailable."""
    with _translated():
        return int(files().size(name))


def delete(name: str) -> None:
    """Delete ``name``; nothing happens when it is not there."""
    with _translated():
        files().delete(name)


def delete_tree(prefix: str) -> None:
    """Delete every file under the folder ``prefix`` (best effort for what is not there)."""
    local = _local_path(prefix)
    if local is not None:
        shutil.rmtree(local, ignore_errors=True)
        return
    with _translated():
        storage = files()
        bucket = getattr(storage, "bucket", None)
        if bucket is not None:  # one listing and batched deletes instead of a walk
            bucket.objects.filter(Prefix=prefix.rstrip("/") + "/").delete()
            return
        for name in walk(prefix):
            storage.delete(name)


def walk(prefix: str) -> list[str]:
    """Every file name under the folder ``prefix``, sorted."""
    found: list[str] = []
    with _translated():
        storage = files()
        if not storage.exists(prefix) and not is_remote():
            return []
        dirs, names = storage.listdir(prefix)
    found.extend(f"{prefix.rstrip('/')}/{n}" for n in names)
    for sub in dirs:
        found.extend(walk(f"{prefix.rstrip('/')}/{sub}"))
    return sorted(found)


def save_bytes(name: str, data: bytes) -> str:
    """Store ``data`` (small files: manifests, reports) as ``name``, replacing what was there.
    Returns ``name``."""
    local = _local_path(name)
    if local is not None:
        _atomic_write(local, lambda handle: handle.write(data))
        return name
    import io

    with _translated():
        return files().save(name, File(io.BytesIO(data), name=name))


def save_file(name: str, source: Path, *, move: bool = False) -> str:
    """Store the local file ``source`` as ``name`` (streamed: any size in bounded memory),
    replacing what was there. ``move=True`` removes ``source`` afterwards (a rename when the
    storage is on the same disk). Returns ``name``. Raises StorageUnavailable."""
    local = _local_path(name)
    if local is not None:
        local.parent.mkdir(parents=True, exist_ok=True)
        if move:
            try:
                os.replace(source, local)
                return name
            except OSError:  # another file system: copy, then remove
                pass
        _atomic_write(local, lambda handle: _copy_from(source, handle))
        if move:
            source.unlink(missing_ok=True)
        return name
    with _translated(), open(source, "rb") as handle:
        stored = files().save(name, File(handle, name=name))
    if move:
        source.unlink(missing_ok=True)
    return stored


def save_stream(name: str, stream: IO[bytes] | Any) -> str:
    """Store a readable binary file object (or a Django ``File``/``UploadedFile``, read in
    chunks) as ``name``, replacing what was there. Returns ``name``."""
    local = _local_path(name)
    if local is not None:
        def write(handle: IO[bytes]) -> None:
            if hasattr(stream, "chunks"):
                for chunk in stream.chunks():
                    handle.write(chunk)
            else:
                shutil.copyfileobj(stream, handle, _CHUNK)
        _atomic_write(local, write)
        return name
    with _translated():
        content = stream if isinstance(stream, File) else File(stream, name=name)
        return files().save(name, content)


def _copy_from(source: Path, handle: IO[bytes]) -> None:
    with open(source, "rb") as src:
        shutil.copyfileobj(src, handle, _CHUNK)


def _atomic_write(target: Path, write: Any) -> None:
    """Write through a temporary file renamed into place: a crash never leaves half a file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_bytes(name: str) -> bytes:
    """The bytes of ``name`` (small files only: manifests, reports). Raises FileNotFoundError
    when it is not stored, StorageUnavailable."""
    local = _local_path(name)
    if local is not None:
        return local.read_bytes()
    with _translated():
        if not files().exists(name):
            raise FileNotFoundError(name)
        with files().open(name, "rb") as handle:
            return handle.read()


def open_local(name: str) -> IO[bytes]:
    """``name`` opened for reading when the storage is on this disk (local mode only)."""
    local = _local_path(name)
    if local is None:
        raise RuntimeError("open_local needs SAMPAN_STORAGE=local; use download_url")
    return open(local, "rb")


def download_to(name: str, target: Path) -> Path:
    """Copy ``name`` into the local file ``target`` (streamed; written through a temporary file
    and renamed, so ``target`` is whole or absent). Returns ``target``. Raises FileNotFoundError
    when it is not stored, StorageUnavailable."""
    local = _local_path(name)
    if local is not None:
        if not local.exists():
            raise FileNotFoundError(name)
        _atomic_write(target, lambda handle: _copy_from(local, handle))
        return target
    storage = files()
    with _translated():
        meta = getattr(getattr(storage, "connection", None), "meta", None)
        if meta is not None:  # S3: boto3's managed, ranged, parallel download
            from botocore.exceptions import ClientError

            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            os.close(fd)
            try:
                meta.client.download_file(storage.bucket_name, name, tmp)
                os.replace(tmp, target)
            except ClientError as error:
                Path(tmp).unlink(missing_ok=True)
                if str(error.response.get("Error", {}).get("Code")) in {"404", "NoSuchKey"}:
                    raise FileNotFoundError(name) from None
                raise
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return target
        with storage.open(name, "rb") as src:
            _atomic_write(target, lambda handle: shutil.copyfileobj(src, handle, _CHUNK))
    return target


def local_file(name: str, *, cache: Path | None = None) -> Path:
    """A path on this host holding the bytes of ``name``.

    Local storage: the stored file itself (nothing is copied). The bucket: a copy under
    ``cache`` (default ``SAMPAN_DATA_DIR/cache``) at the same name, downloaded once: names of
    samples and packages are content-addressed or immutable, so a cached copy stays right.
    Raises FileNotFoundError, StorageUnavailable.
    """
    local = _local_path(name)
    if local is not None:
        return local
    root = cache if cache is not None else cache_root()
    target = root / name
    if target.is_file():
        try:
            os.utime(target)  # recently used: trimmed last (cache_trim)
        except OSError:
            pass
        return target
    return download_to(name, target)


def cache_root() -> Path:
    """This host's cache of files downloaded from the bucket: ``SAMPAN_DATA_DIR/cache``."""
    return Path(settings.DATA_DIR) / "cache"


def cache_trim(*, keep: set[Path] | frozenset[Path] = frozenset(),
               max_bytes: int | None = None, root: Path | None = None) -> tuple[int, int]:
    """Delete the least recently used files of the download cache (:func:`cache_root`; a file's
    mtime is set each time :func:`local_file` hands it out) until it holds at most ``max_bytes``
    (default ``SAMPAN_CACHE_MAX_BYTES``), never a path in ``keep`` (what the running job is
    using). Without it the cache of a training host grew by every dataset it ever trained on.
    Returns (files deleted, bytes freed). Files another process deletes meanwhile are skipped."""
    root = root if root is not None else cache_root()
    limit = int(settings.SAMPAN_CACHE_MAX_BYTES if max_bytes is None else max_bytes)
    entries: list[tuple[float, int, Path]] = []
    total = 0
    for path in root.rglob("*") if root.is_dir() else ():
        try:
            if path.name.startswith(".tmp-") or not path.is_file():
                continue  # a download in progress
            stat = path.stat()
        except OSError:
            continue
        total += stat.st_size
        if path not in keep:
            entries.append((stat.st_mtime, stat.st_size, path))
    deleted = freed = 0
    for _mtime, size, path in sorted(entries):
        if total <= limit:
            break
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        else:
            deleted += 1
            freed += size
        total -= size
    return deleted, freed


def download_url(name: str, *, filename: str | None = None, content_type: str | None = None,
                 inline: bool = False, default: str = "download") -> str | None:
    """A presigned GET URL of ``name`` for a browser or a device (HTTP Range works there),
    valid ``SAMPAN_S3_URL_EXPIRE_S`` seconds; None with local storage (the web process serves
    the file then). ``filename`` sets the ``Content-Disposition`` the store answers with
    (``sampan.core.disposition``: any Unicode name), ``content_type`` its ``Content-Type``."""
    if not is_remote():
        return None
    from sampan.core.disposition import content_disposition

    parameters: dict[str, str] = {}
    if filename is not None:
        parameters["ResponseContentDisposition"] = content_disposition(
            filename, default=default, inline=inline)
    if content_type is not None:
        parameters["ResponseContentType"] = content_type
    with _translated():
        return storages[DOWNLOADS].url(name, parameters=parameters or None,
                                       expire=int(settings.SAMPAN_S3_URL_EXPIRE_S))


def check() -> None:
    """Raise StorageUnavailable when the bucket cannot be used (missing, refused credentials,
    unreachable); nothing for local storage. One HEAD request."""
    if not is_remote():
        return
    from botocore.exceptions import ClientError

    storage = files()
    with _translated():
        try:
            storage.connection.meta.client.head_bucket(Bucket=storage.bucket_name)
        except ClientError as error:  # HEAD answers carry no code but the status
            if str(error.response.get("Error", {}).get("Code")) in {"404", "NoSuchBucket"}:
                error.response["Error"]["Code"] = "NoSuchBucket"
            raise
