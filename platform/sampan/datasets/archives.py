"""Safe reading of an uploaded zip in ImageNet-folder layout (stdlib only, and Django's gettext
for the messages an upload is refused with).

Layout: ``<class>/<file>`` (one folder per class label), optionally inside one extra top folder
(``dataset/<class>/<file>``) that is stripped when it is the only top entry and holds at least one
sub-folder. Files directly at the root are imported unlabeled. In deeper trees the first folder
level under the root is the class (``cat/indoor/1.jpg`` has label ``cat``).

Split layout (the "folder structure" export of Roboflow, EasyDL and others): when every top folder
(after the strip above) is a split name and at least one file lies two folders down
(``train/cat/1.jpg``), the top folders are splits and the folders inside them are the classes;
classes are never named train/valid/test. Split names, case-insensitive: ``train``/``training``
-> ``train``; ``val``/``valid``/``validation`` -> ``val``; ``test``/``testing`` -> ``test``.
Each member keeps its split (``ArchiveMember.split``; None outside this layout). A zip whose
classes really are named like splits is read this way only if those folders hold sub-folders.

Names: entry names are decoded by ``sampan.datasets.zip_names`` (UTF-8 flag, Info-ZIP Unicode
Path field, else one of UTF-8, GB18030, cp437 for the whole archive: folders from Chinese Windows
become ``猫``, not mojibake), ``\\`` is a separator (PowerShell 5.1), and class labels and member
names are Unicode NFC (macOS writes NFD: ``Cafe\\u0301`` is the class ``Caf\\u00e9``). Class labels
follow the name rule of ``sampan.core.names`` (no control or format characters).

Safety rules, applied to EVERY entry, on its decoded name with ``\\`` already turned into ``/``,
before anything is written:

- absolute names (``/x``, ``\\\\server\\x``), drive letters (``C:x``, ``C:\\x``), ``..`` or empty
  path parts, NUL in a name, symlinks and other special files (Unix mode in ``external_attr``),
  encrypted and duplicate entries reject the WHOLE archive with ``ArchiveError`` naming the entry;
- OS and notebook junk (``__MACOSX/``, ``._*`` AppleDouble, ``.DS_Store``, ``.ipynb_checkpoints/``,
  other dotfiles and dot-folders, ``Thumbs.db``, ``desktop.ini``) and documentation files
  (any ``.txt``/``.md``/``.markdown``/``.rst``; ``README``, ``LICENSE``/``LICENCE``, ``COPYING``,
  ``NOTICE``, ``CHANGELOG``, ``CITATION``, ``AUTHORS`` with no suffix or a suffix that is not an
  image's: ``README.dataset.txt``, ``LICENSE``, but not ``readme.jpg``) are ignored and listed in
  ``ArchiveScan.ignored``
  (files only; directory entries are structure and are not listed);
- while extracting, the bytes actually decompressed are counted (the header's ``file_size`` is
  never trusted) against a total quota, a per-member cap and a per-member compression ratio.

Detection layout (``folder_classes=False``, for object-detection datasets): folders are not
classes and the archive is not re-rooted; every file but junk and documentation is a member with
its full NFC path and no label, and ``.txt`` files are kept (YOLO labels, VOC image sets) unless
their name is a documentation name (``README.roboflow.txt``). ``sampan.datasets.formats`` reads
the annotations.

Extracted files get generated names (``000001.jpg``), so no name from the archive ever reaches
the file system. Import jobs turn ``ArchiveError`` into a user-facing 400 (it is a ``ValueError``
so that this module stays free of the platform's error hierarchy).
"""

from __future__ import annotations

import re
import shutil
import stat
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from sampan.core.names import InvalidName, clean_name
from sampan.datasets.zip_names import entry_names

MiB = 1024 * 1024
GiB = 1024 * MiB
CHUNK_BYTES = 1 * MiB
MAX_LABEL_CHARS = 200  # ClassLabel.name max_length

_DRIVE = re.compile(r"^[A-Za-z]:")
_SUFFIX = re.compile(r"^\.[a-z0-9]{1,10}$")
_NUMBER = re.compile(r"([0-9]+)")
# Why a file of the zip is not imported: the import report's "ignored" and "rejected" reasons,
# stored in English (the imports worker writes them) and read in the request's language
# (sampan.datasets.report_texts).
MACOS_RESOURCE_FORK = gettext_noop("macOS resource fork")
JUPYTER_CHECKPOINT = gettext_noop("Jupyter checkpoint")
APPLEDOUBLE_FILE = gettext_noop("AppleDouble file")
MACOS_FOLDER_METADATA = gettext_noop("macOS folder metadata")
HIDDEN_FILE = gettext_noop("hidden file")
NOT_AN_IMAGE_DOCUMENT = gettext_noop("documentation or text file, not an image")
MEMBER_TOO_LARGE = gettext_noop("larger than %(limit)d bytes, the limit for one file")
DAMAGED_IN_ZIP = gettext_noop("damaged in the zip: %(error)s")
_WINDOWS_JUNK = {"thumbs.db": gettext_noop("Windows thumbnail cache"),
                 "desktop.ini": gettext_noop("Windows folder settings")}
#: why a folder name is no class name (an ArchiveError's, inside a VOC object's skip reason or a
#: warning of a Sampan export's labels)
EMPTY_CLASS_NAME = gettext_noop("empty class name %(name)r")
CLASS_NAME_REFUSED = gettext_noop("class name %(name)r %(reason)s")
#: every reason above, for the reader
SKIP_REASONS = (MACOS_RESOURCE_FORK, JUPYTER_CHECKPOINT, APPLEDOUBLE_FILE, MACOS_FOLDER_METADATA,
                HIDDEN_FILE, *_WINDOWS_JUNK.values(), NOT_AN_IMAGE_DOCUMENT, MEMBER_TOO_LARGE,
                DAMAGED_IN_ZIP)
_DOC_STEMS = ("readme", "license", "licence", "copying", "notice", "changelog", "citation",
              "authors")
_DOC_SUFFIXES = {".txt", ".md", ".markdown", ".rst"}
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff"}
SPLIT_FOLDERS = {"train": "train", "training": "train", "val": "val", "valid": "val",
                 "validation": "val", "test": "test", "testing": "test"}


class ArchiveError(ValueError):
    """The archive is unsafe or unreadable; the message names the entry and is shown to users."""


@dataclass(frozen=True)
class ArchiveLimits:
    """Extraction limits. Sizes in bytes; ratio = decompressed bytes / compressed bytes.

    The ratio is enforced once a member has produced more than ``ratio_min_bytes``, so that small
    flat images (a blank BMP compresses ~1000:1) are not mistaken for bombs; real photos are ~1:1.
    It is also enforced on the whole archive once it has produced more than
    ``archive_ratio_min_bytes``: 3,000 members of 1 MiB of zeros (3.4 MB of zip) each stay under
    the member threshold and wrote 2 GiB before the total limit stopped them (seen in review).
    A member above ``max_member_bytes`` is rejected by name (its bytes still count towards the
    total) and the others are extracted.
    Defaults follow the usual zip-bomb guidance (OWASP "File Upload Cheat Sheet"; D. Fifield,
    "A better zip bomb", 2019, for why counting actual output bytes matters).
    """

    max_total_bytes: int = 2 * GiB
    max_member_bytes: int = 64 * MiB
    max_ratio: float = 100.0
    ratio_min_bytes: int = 1 * MiB
    archive_ratio_min_bytes: int = 64 * MiB
    max_members: int = 100_000
    #: bytes of the central directory (names included): ~600 a member at 100,000 members
    max_directory_bytes: int = 64 * MiB


@dataclass(frozen=True)
class ArchiveMember:
    """One file to import.

    ``name``: its path below the (stripped) root, NFC; ``path_in_zip``: its decoded name in the
    archive with ``/`` separators (shown in reports); ``index``: its position in
    ``ZipFile.infolist()``; ``split``: ``train`` | ``val`` | ``test`` in the split layout.
    """

    name: str
    label: str | None
    path_in_zip: str
    index: int = -1
    split: str | None = None


@dataclass(frozen=True)
class ExtractedFile:
    """An extracted member: ``local_path`` lies in ``ArchiveScan.directory``; ``size`` in bytes."""

    path_in_zip: str
    label: str | None
    local_path: Path
    name: str = ""
    size: int = 0
    split: str | None = None


@dataclass
class ArchiveScan:
    """Result of ``extract_archive``. The caller owns ``directory`` and removes it when done."""

    directory: Path
    members: list[ExtractedFile] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)  # (path_in_zip, reason)
    #: entries whose bytes are damaged (bad CRC, broken deflate stream): (path_in_zip, reason);
    #: the rest of the archive is still imported
    rejected: list[tuple[str, str]] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        """Distinct class labels in ``sort_labels`` order."""
        return sort_labels(m.label for m in self.members if m.label is not None)


def normalise_label(name: str) -> str:
    """Class label from a folder name: Unicode NFC, surrounding whitespace trimmed.

    ``"Cat "`` and ``"Cat"`` (and NFD ``"Cafe\\u0301"`` vs NFC ``"Caf\\u00e9"``, as macOS writes
    them) are the same class. Numeric-looking names stay strings (``"10"``). Case is kept.
    Raises ValueError (``InvalidName``) when nothing is left, when it holds a character the name
    rule of ``sampan.core.names`` refuses (control and format characters), or when it is longer
    than ``MAX_LABEL_CHARS``.
    """
    try:
        return clean_name(name, max_length=MAX_LABEL_CHARS)
    except InvalidName as exc:
        if not name.strip():
            raise InvalidName(_(EMPTY_CLASS_NAME) % {"name": name}) from None
        shown = name if len(name) <= 40 else name[:20] + "..."
        raise InvalidName(_(CLASS_NAME_REFUSED) % {"name": shown, "reason": exc}) from None


def _natural_key(label: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    parts = tuple(
        (0, int(chunk)) if chunk.isdigit() else (1, chunk.casefold())
        for chunk in _NUMBER.split(label)
        if chunk
    )
    return parts, label  # the raw label breaks ties ("01" vs "1", "cat" vs "Cat")


def sort_labels(names: Iterable[str]) -> list[str]:
    """Distinct labels in natural order: digit runs compare as numbers and sort before text, text
    compares case-insensitively, ties fall back to the exact string. ``["10", "Cat", "2", "1"]``
    -> ``["1", "2", "10", "Cat"]``. This order is the class index order of a training run.
    """
    return sorted(set(names), key=_natural_key)


def _unsafe_reason(info: zipfile.ZipInfo, name: str) -> str | None:
    """Why the entry with decoded, ``/``-separated ``name`` is unsafe, or None (translated: the
    upload's 400 says it)."""
    mode = info.external_attr >> 16
    if "\x00" in name:
        return _("NUL character in name")
    if name.startswith("/") or _DRIVE.match(name):
        return _("absolute path")
    parts = (name[:-1] if name.endswith("/") else name).split("/")
    if any(part == ".." for part in parts):
        return _("parent directory reference")
    if any(part in ("", ".") for part in parts):
        return _("empty path component")
    if stat.S_ISLNK(mode):
        return _("symbolic link")
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        return _("special file")
    if info.flag_bits & 0x1:
        return _("encrypted entry")
    return None


def _junk_reason(parts: tuple[str, ...]) -> str | None:
    for part in parts:
        if part == "__MACOSX":
            return MACOS_RESOURCE_FORK
        if part == ".ipynb_checkpoints":
            return JUPYTER_CHECKPOINT
    base = parts[-1]
    if base.startswith("._"):
        return APPLEDOUBLE_FILE
    if base == ".DS_Store":
        return MACOS_FOLDER_METADATA
    if any(part.startswith(".") for part in parts):
        return HIDDEN_FILE
    return _WINDOWS_JUNK.get(base.casefold())


def _document_reason(base: str, *, keep_text: bool = False) -> str | None:
    folded = base.casefold()
    suffix = PurePosixPath(folded).suffix
    if folded.split(".")[0] in _DOC_STEMS and suffix not in IMAGE_SUFFIXES:
        return NOT_AN_IMAGE_DOCUMENT
    if suffix in _DOC_SUFFIXES and not (keep_text and suffix == ".txt"):
        return NOT_AN_IMAGE_DOCUMENT
    return None


def _is_split_layout(paths: list[tuple[str, ...]]) -> bool:
    folders = {parts[0] for parts in paths if len(parts) >= 2}
    return (bool(folders) and all(f.casefold() in SPLIT_FOLDERS for f in folders)
            and any(len(parts) >= 3 for parts in paths))


def plan_archive(
    archive: zipfile.ZipFile, limits: ArchiveLimits = ArchiveLimits(), *,
    folder_classes: bool = True, texts: bool = False,
) -> tuple[list[ArchiveMember], list[tuple[str, str]]]:
    """Check every entry and decide what to import; reads names only, writes nothing.

    Returns (members to import in archive order, ignored ``(path_in_zip, reason)``).
    ``folder_classes=False`` reads the detection layout (module docstring): no labels, no split,
    no stripped top folder, ``.txt`` files kept. ``texts`` (text classification): the folder
    layout with ``.txt`` files kept as members (documentation names such as ``README.txt`` are
    still ignored).
    Raises ArchiveError on the first unsafe entry, a duplicate name, an empty or refused class
    name (folder layout) or more than ``limits.max_members`` entries.
    """
    infos = archive.infolist()
    if len(infos) > limits.max_members:
        raise ArchiveError(_("too many entries: %(entries)s (limit %(limit)s)")
                           % {"entries": len(infos), "limit": limits.max_members})
    names = entry_names(infos)
    seen: set[str] = set()
    for info, name in zip(infos, names, strict=True):
        reason = _unsafe_reason(info, name)
        if reason:
            raise ArchiveError(_("unsafe entry %(name)r: %(reason)s; archive rejected")
                               % {"name": name, "reason": reason})
        if name in seen:
            raise ArchiveError(_("duplicate entry %(name)r; archive rejected") % {"name": name})
        seen.add(name)
    ignored: list[tuple[str, str]] = []
    kept: list[tuple[int, str, tuple[str, ...]]] = []
    for index, (_info, name) in enumerate(zip(infos, names, strict=True)):
        if name.endswith("/"):
            continue
        parts = tuple(name.split("/"))
        skip = _junk_reason(parts) or _document_reason(parts[-1],
                                                           keep_text=texts or not folder_classes)
        if skip:
            ignored.append((name, skip))
        else:
            kept.append((index, name, parts))
    if not folder_classes:
        return [ArchiveMember(name=unicodedata.normalize("NFC", name), label=None,
                              path_in_zip=name, index=index)
                for index, name, _parts in kept], ignored
    paths = [parts for _index, _name, parts in kept]
    split_layout = _is_split_layout(paths)
    tops = {parts[0] for parts in paths}
    strip = (
        not split_layout
        and len(tops) == 1
        and all(len(parts) >= 2 for parts in paths)
        and any(len(parts) >= 3 for parts in paths)
    )
    if strip:
        split_layout = _is_split_layout([parts[1:] for parts in paths])
    members: list[ArchiveMember] = []
    for index, name, parts in kept:
        rel = parts[1:] if strip else parts
        split: str | None = None
        inner = rel
        if split_layout and len(rel) >= 2:
            split = SPLIT_FOLDERS[rel[0].casefold()]
            inner = rel[1:]
        label: str | None = None
        if len(inner) > 1:
            try:
                label = normalise_label(inner[0])
            except ValueError as exc:
                raise ArchiveError(_("entry %(name)r: %(reason)s")
                                   % {"name": name, "reason": exc}) from None
        members.append(ArchiveMember(name=unicodedata.normalize("NFC", "/".join(rel)),
                                     label=label, path_in_zip=name, index=index, split=split))
    return members, ignored


def directory_summary(zip_path: str | Path) -> tuple[int, int]:
    """(entries, bytes of the central directory) from the archive's end-of-central-directory
    record (zip64 included), read without reading the directory itself. Raises ArchiveError
    when there is no such record (not a zip)."""
    try:
        with open(zip_path, "rb") as handle:
            # stdlib's reader of the end record: the one zipfile.ZipFile itself starts with
            record = zipfile._EndRecData(handle)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ArchiveError(_("not a readable zip archive: %(error)s") % {"error": exc}) from None
    if not record:
        raise ArchiveError(_("not a readable zip archive: File is not a zip file"))
    return int(record[zipfile._ECD_ENTRIES_TOTAL]), int(record[zipfile._ECD_SIZE])


def _entries_in_directory(zip_path: str | Path, stop_after: int) -> int:
    """The central directory headers actually present, counted by reading the directory as a
    stream (each header's fixed 46 bytes, then a skip over its name, extra field and comment;
    APPNOTE.TXT 4.3.12), up to ``stop_after + 1``. ``ZipFile`` reads the directory by its size,
    not by the count the end record states, so a forged count (1 entry over a directory of a
    million) would pass a check of the record alone. Where the directory is found is computed
    as ``zipfile._RealGetContents`` does (a zip with data before it included)."""
    with open(zip_path, "rb") as handle:
        record = zipfile._EndRecData(handle)
        if not record:
            return 0
        size = int(record[zipfile._ECD_SIZE])
        start = int(record[zipfile._ECD_LOCATION]) - size
        if record[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:
            start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator
        handle.seek(max(0, start))
        count, read = 0, 0
        while read + zipfile.sizeCentralDir <= size and count <= stop_after:
            header = handle.read(zipfile.sizeCentralDir)
            if len(header) < zipfile.sizeCentralDir or header[:4] != zipfile.stringCentralDir:
                break  # not a header: ZipFile says what is wrong when it reads it
            fields = zipfile.struct.unpack(zipfile.structCentralDir, header)
            skip = (fields[zipfile._CD_FILENAME_LENGTH] + fields[zipfile._CD_EXTRA_FIELD_LENGTH]
                    + fields[zipfile._CD_COMMENT_LENGTH])
            handle.seek(skip, 1)
            read += zipfile.sizeCentralDir + skip
            count += 1
    return count


def open_archive(zip_path: str | Path, limits: ArchiveLimits = ArchiveLimits()
                 ) -> zipfile.ZipFile:
    """``zipfile.ZipFile(zip_path)`` once its end record says the central directory is within
    ``limits`` (``max_members`` entries, ``max_directory_bytes``): ``ZipFile`` reads the whole
    directory into memory, ~500 bytes an entry, so a zip of millions of empty entries cost
    gigabytes before its entries were counted. Raises ArchiveError naming the limit, or when it
    is not a readable zip (including an entry flagged UTF-8 whose name is not UTF-8)."""
    entries, directory_bytes = directory_summary(zip_path)
    if entries > limits.max_members:
        raise ArchiveError(_("too many entries: %(entries)s (limit %(limit)s)")
                           % {"entries": entries, "limit": limits.max_members})
    if directory_bytes > limits.max_directory_bytes:
        raise ArchiveError(_("its central directory is %(bytes)s bytes (limit %(limit)s): names "
                             "too long or too many")
                           % {"bytes": directory_bytes, "limit": limits.max_directory_bytes})
    present = _entries_in_directory(zip_path, limits.max_members)
    if present > limits.max_members:
        raise ArchiveError(_("too many entries: more than %(limit)s in its central directory "
                             "(its end record says %(entries)s)")
                           % {"limit": limits.max_members, "entries": entries})
    try:
        return zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
        raise ArchiveError(_("not a readable zip archive: %(error)s") % {"error": exc}) from None


class _MemberTooLarge(ArchiveError):
    """One member passed ``max_member_bytes``: it is rejected, ``written`` bytes were produced."""

    def __init__(self, message: str, written: int) -> None:
        super().__init__(message)
        self.written = written


def _copy_counted(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, shown: str, target: Path,
    limits: ArchiveLimits, total_so_far: int, archive_bytes: int,
) -> int:
    """Decompress one member into ``target`` in chunks, counting real output; returns its bytes.
    Errors name the member ``shown`` (its decoded name)."""
    # A header can lie about compress_size too; it cannot exceed the archive itself.
    compressed = max(1, min(info.compress_size, archive_bytes))
    written = 0
    with archive.open(info) as source, target.open("xb") as sink:
        while chunk := source.read(CHUNK_BYTES):
            written += len(chunk)
            if written > limits.max_member_bytes:
                raise _MemberTooLarge(MEMBER_TOO_LARGE % {"limit": limits.max_member_bytes},
                                      written)
            if total_so_far + written > limits.max_total_bytes:
                raise ArchiveError(
                    f"archive expands to more than {limits.max_total_bytes} bytes "
                    f"(at entry {shown!r})"
                )
            if written > limits.ratio_min_bytes and written / compressed > limits.max_ratio:
                raise ArchiveError(
                    f"entry {shown!r} compression ratio above {limits.max_ratio:g} "
                    "(possible zip bomb)"
                )
            produced = total_so_far + written
            if (produced > limits.archive_ratio_min_bytes
                    and produced / max(1, archive_bytes) > limits.max_ratio):
                raise ArchiveError(
                    f"archive expands to more than {limits.max_ratio:g} times its size "
                    f"(at entry {shown!r}; possible zip bomb)"
                )
            sink.write(chunk)
    return written


def extract_archive(
    zip_path: str | Path, dest_dir: str | Path, *, limits: ArchiveLimits = ArchiveLimits(),
    folder_classes: bool = True, on_member: Callable[[int, int], None] | None = None,
    texts: bool = False,
) -> ArchiveScan:
    """Validate and extract ``zip_path`` into a fresh temporary folder under ``dest_dir``.

    Every entry is checked (``plan_archive``) before any byte is written; then members are
    decompressed one by one with the limits counted on actual output. A damaged entry (bad CRC,
    broken compressed stream, unsupported compression method) is listed in ``rejected`` and the
    others are extracted. On any other error the temporary folder is removed and nothing remains.
    ``folder_classes`` and ``texts`` as in ``plan_archive``. ``on_member(done, count)`` is
    called after each member (the import job's heartbeat: a 2 GiB archive takes minutes to
    extract). Returns an ``ArchiveScan`` whose ``directory`` the caller removes after import.
    Raises ArchiveError for an unsafe, unreadable, oversized or unsupported archive; OSError for
    disk errors on ``dest_dir``.
    """
    zip_path = Path(zip_path)
    archive = open_archive(zip_path, limits)
    with archive:
        members, ignored = plan_archive(archive, limits, folder_classes=folder_classes,
                                        texts=texts)
        directory = Path(tempfile.mkdtemp(prefix="archive-", dir=dest_dir))
        scan = ArchiveScan(directory=directory, ignored=ignored)
        try:
            archive_bytes = zip_path.stat().st_size
            total = 0
            infos = archive.infolist()
            for index, member in enumerate(members, start=1):
                info = infos[member.index]
                suffix = PurePosixPath(member.name).suffix.lower()
                local = directory / f"{index:06d}{suffix if _SUFFIX.match(suffix) else ''}"
                try:
                    size = _copy_counted(archive, info, member.path_in_zip, local, limits, total,
                                         archive_bytes)
                except _MemberTooLarge as exc:
                    # one file too large is that file's problem: rejected by name, the others
                    # imported; its bytes count towards the archive's total all the same
                    local.unlink(missing_ok=True)
                    scan.rejected.append((member.path_in_zip, str(exc)))
                    total += exc.written
                    continue
                except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
                    # one damaged entry is that file's problem, as an undecodable image is:
                    # rejected by name, the others imported (the limits above still stop all)
                    local.unlink(missing_ok=True)
                    scan.rejected.append((member.path_in_zip,
                                          DAMAGED_IN_ZIP % {"error": exc}))
                    continue
                total += size
                scan.members.append(ExtractedFile(member.path_in_zip, member.label, local,
                                                  member.name, size, member.split))
                if on_member is not None:
                    on_member(index, len(members))
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
    return scan
