"""Index files in folders users sync and share: written atomically, read as untrusted input.

Both saved indexes (the vault's lexical index, the chunk store's keyword index) are one
`.npz` archive: a `header.json` member and one-dimensional arrays, stored uncompressed.
Written to a temporary name and renamed into place, so a crash never leaves half a file;
read with `allow_pickle=False`, sizes checked before anything is decompressed, each array
checked for exactly the type it was saved with. The lexical index is memory-mapped
(`open_mapped`): its members are located in the file and viewed in place, so a restart
reads only the pages its queries touch.

A writer holds an exclusive `flock` on its temporary file while it writes; the kernel
drops the lock when the writer dies, even by kill -9, so `remove_abandoned` can tell a
temporary nobody is writing from one being written, whatever its age.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import mmap
import os
import shutil
import struct
import tempfile
import time
import weakref
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO, TypeVar

try:
    import fcntl
except ImportError:  # Windows: temporaries are judged by age alone
    fcntl = None  # type: ignore[assignment]

import numpy as np
import numpy.typing as npt

MAX_INFLATION = 50
"""How many times its size a saved index may inflate to (ours: a few times)."""
INFLATION_ALLOWANCE = 16 * 1024 * 1024
"""Bytes of inflation any saved index may have, for small files."""
_FOLDER_LOCK = "lock"
HEADER = "header.json"
"""The archive member holding the index's JSON header."""

UNREADABLE = (
    OSError,
    ValueError,
    KeyError,
    TypeError,
    EOFError,
    zipfile.BadZipFile,
    RecursionError,
    MemoryError,
)
"""What reading a damaged or forged archive can raise: each means "discard and rebuild"."""

logger = logging.getLogger(__name__)

_Scalar = TypeVar("_Scalar", bound=np.generic)


def refused_folder(folder: Path) -> str | None:
    """Why an index folder must not be used, or None.

    A symlink could point the writes anywhere (a synced vault is anyone's input), and a
    plain file in its place would fail every save; both are said at WARNING, not hidden.
    """
    if folder.is_symlink():
        return "it is a symbolic link; remove it to let the index be saved"
    if folder.exists() and not folder.is_dir():
        return "it is not a folder; remove it to let the index be saved"
    return None


def check_sizes(path: Path) -> None:
    """Refuse an archive whose members would inflate far beyond the file (a deflate bomb).

    Our own files compress numbers and JSON a few times over; a member claiming more than
    `MAX_INFLATION` times the file's size (plus `INFLATION_ALLOWANCE`) was not written by
    us, and is refused before a byte is decompressed.
    """
    limit = MAX_INFLATION * path.stat().st_size + INFLATION_ALLOWANCE
    with zipfile.ZipFile(path) as archive:
        claimed = sum(info.file_size for info in archive.infolist())
    if claimed > limit:
        msg = f"its members would inflate to {claimed:,} bytes (at most {limit:,} expected)"
        raise ValueError(msg)


def typed_array(
    data: Mapping[str, npt.NDArray[Any]], name: str, dtype: type[_Scalar]
) -> npt.NDArray[_Scalar]:
    """A one-dimensional array of exactly the type saved: nothing is cast into range."""
    array = data[name]
    if array.dtype != dtype or array.ndim != 1:
        msg = f"{name} is not a one-dimensional {np.dtype(dtype).name} array"
        raise ValueError(msg)
    return array


Members = Mapping[str, "npt.NDArray[Any] | Sequence[npt.NDArray[Any]]"]
"""Arrays by member name; a sequence of one-dimensional arrays of one type is written as
their concatenation, without making it (a build merges shards' records this way)."""


def write_npz(out: BinaryIO, header: dict[str, Any], arrays: Members) -> None:
    """Write what `np.savez` would, streamed: the header as JSON text, arrays uncopied.

    `np.savez` needs the header as an array (JSON as a `str`, then bytes) and copies
    every array into a bytes object on the way out: 25 MB of transient memory on a
    6,280-note vault, which the allocator kept after the save. `np.load` reads the
    result the same way, the header member as bytes.
    """
    with zipfile.ZipFile(out, "w", allowZip64=True) as archive:
        with io.TextIOWrapper(archive.open(HEADER, "w", force_zip64=True), "utf-8") as text:
            json.dump(header, text)
        for name, value in arrays.items():
            parts = [value] if isinstance(value, np.ndarray) else list(value)
            dtype = parts[0].dtype if parts else np.dtype(np.uint8)
            if any(part.dtype != dtype or part.ndim != 1 for part in parts):
                msg = f"the parts of {name} are not one-dimensional arrays of one type"
                raise ValueError(msg)
            length = sum(part.size for part in parts)
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy_header = {
                    "descr": np.lib.format.dtype_to_descr(dtype),
                    "fortran_order": False,
                    "shape": (length,),
                }
                np.lib.format.write_array_header_1_0(member, npy_header)
                for part in parts:
                    member.write(np.ascontiguousarray(part).data.cast("B"))


def write_atomically(path: Path, header: dict[str, Any], arrays: Members) -> None:
    """Write an archive to a temporary name beside `path` and rename it into place.

    Raises:
        OSError: the folder cannot be made or written (nothing is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            if fcntl is not None:
                fcntl.flock(out.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            write_npz(out, header, arrays)
            out.flush()
            os.fsync(out.fileno())
            os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def save_if_possible(path: Path, header: dict[str, Any], arrays: Members, what: str) -> bool:
    """`write_atomically` for a file that only saves work: failing to write it is no error.

    A read-only vault, a full disk or a folder in the way costs the next process a rebuild,
    not this one its answer; so it is logged (at INFO) instead of raised.

    Returns:
        Whether the file was written.
    """
    try:
        write_atomically(path, header, arrays)
    except OSError as exc:
        logger.info("Not saving the %s to %s: %s", what, path, exc)
        return False
    return True


def remove_abandoned(candidates: Iterable[Path], older_than_s: float) -> int:
    """Delete temporaries no live writer holds; returns how many went.

    A temporary whose lock can be taken belongs to a writer that died (kill -9, a power
    cut) and goes at once; where locks are not available, temporaries older than
    `older_than_s` go, as no write takes that long.
    """
    cutoff = time.time() - older_than_s
    removed = 0
    for path in candidates:
        try:
            if not path.is_file() or path.is_symlink():
                continue
            if fcntl is None:
                abandoned = path.stat().st_mtime < cutoff
            else:
                with open(path, "rb") as probe:
                    try:
                        fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    except BlockingIOError:
                        continue  # a writer is at work
                    abandoned = True
            if abandoned:
                path.unlink()
                removed += 1
        except OSError as exc:
            logger.debug("Could not remove the abandoned file %s: %s", path, exc)
    return removed


class _Descriptor:
    """An open file descriptor, closed when the last holder lets go of it."""

    def __init__(self, number: int) -> None:
        self.number = number
        weakref.finalize(self, os.close, number)


class MappedArchive:
    """An archive's header and its arrays as read-only views of the mapped file."""

    def __init__(
        self,
        header: dict[str, Any],
        arrays: dict[str, npt.NDArray[Any]],
        mapped: mmap.mmap,
        file: _Descriptor | None = None,
        starts: dict[str, int] | None = None,
    ) -> None:
        """Wrap what `open_mapped` read.

        Args:
            header: the archive's JSON header.
            arrays: each member array, a view of `mapped`.
            mapped: the file, mapped.
            file: the same file, open for `bytes_reader`; None where there is no `pread`.
            starts: where each array's data begins in the file.
        """
        self.header = header
        self.arrays = arrays
        self._mapped = mapped
        self._file = file
        self._starts = starts or {}

    def bytes_reader(self, name: str) -> Callable[[int, int], bytes] | None:
        """A reader of `size` bytes at `offset` of a `uint8` array, through the file.

        Read through the mapping, 200 records scattered over help x16's index brought
        132 MB of it into the process: the kernel maps the whole large folio around each
        page touched, however the mapping is advised. `os.pread` copies the bytes asked
        for and maps nothing. None where there is no `pread` (Windows): read the array.
        """
        file = self._file  # held by the reader: closed once neither it nor the archive is
        if file is None:
            return None
        start = self._starts[name]

        def read(offset: int, size: int) -> bytes:
            data = os.pread(file.number, size, start + offset)
            if len(data) != size:  # the mapping would have crashed the process (SIGBUS)
                msg = "the file was cut short after it was opened"
                raise ValueError(msg)
            return data

        return read

    def release_pages(self) -> None:
        """Let go of the pages read so far, and read ahead no more than a page from now on.

        Checking a mapped index reads all of it once; without this, those pages count in
        the process's memory until the kernel needs them back. A query reads a few
        scattered records and postings, where the kernel's read-ahead would bring in
        up to 128 KB around each (tens of MB for a query's 200 notes, measured).
        """
        for advice in ("MADV_DONTNEED", "MADV_RANDOM"):
            if hasattr(mmap, advice) and hasattr(self._mapped, "madvise"):
                self._mapped.madvise(getattr(mmap, advice))


@contextlib.contextmanager
def locked_folder(prefix: str) -> Iterator[Path]:
    """A new temporary folder, locked as a writer's file is, removed when done.

    For the files of a build spread over processes: `remove_abandoned_folders` removes
    the folder of a build whose process was killed, and only that.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        with open(folder / _FOLDER_LOCK, "wb") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def kept_folder(folder: Path) -> Iterator[Path | None]:
    """A folder that outlives its writer, locked for this process while in use.

    For work a killed or stopped process leaves for the next to take up (a build's
    shards). Never removed here: whoever finished the work removes it, and
    `remove_abandoned_folders` one no process holds.

    Yields:
        The folder, or None when it cannot be made, another live process holds it, or
        the system has no file locks (Windows: two processes would share it).
    """
    lock = None
    if fcntl is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            lock = open(folder / _FOLDER_LOCK, "ab")  # noqa: SIM115 - held while in use
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:  # BlockingIOError: another process holds it
            logger.debug("Not using %s: %s", folder, exc)
            if lock is not None:
                lock.close()
            lock = None
    if lock is None:
        yield None
        return
    with lock:
        yield folder


def remove_abandoned_folders(candidates: Iterable[Path], older_than_s: float) -> int:
    """Remove `locked_folder`s and `kept_folder`s no live process holds; returns how many went."""
    removed = 0
    for folder in candidates:
        if folder.is_symlink() or not folder.is_dir():
            continue
        lock = folder / _FOLDER_LOCK
        try:
            stale = not lock.exists() and folder.stat().st_mtime < time.time() - older_than_s
        except OSError:
            continue
        if stale or remove_abandoned([lock], older_than_s):
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def open_mapped(path: Path) -> MappedArchive:
    """Open an archive written by `write_npz` in place: its header read, its arrays mapped.

    Every member must be stored (not compressed) and hold a one-dimensional array of a
    plain numeric type inside the file; nothing is decompressed and no array is read
    until used.

    Raises:
        ValueError, OSError, zipfile.BadZipFile: a damaged or foreign file (see UNREADABLE).
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else None
        # The file as it is now, for `bytes_reader`: a later save renames another over it.
        # Closed by the last holder, so also when the checks below fail.
        file = _Descriptor(os.dup(handle.fileno())) if size and hasattr(os, "pread") else None
    if mapped is None:
        msg = "the file is empty"
        raise ValueError(msg)
    header: Any = None
    arrays: dict[str, npt.NDArray[Any]] = {}
    starts: dict[str, int] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                msg = f"{info.filename} is compressed"
                raise ValueError(msg)
            start = _member_start(mapped, info)
            end = start + info.compress_size
            if end > size:
                msg = f"{info.filename} runs past the end of the file"
                raise ValueError(msg)
            if info.filename == HEADER:
                if info.file_size > INFLATION_ALLOWANCE:
                    msg = "the header is too large"
                    raise ValueError(msg)
                header = json.loads(mapped[start:end])
            elif info.filename.endswith(".npy"):
                name = info.filename[:-4]
                arrays[name], starts[name] = _mapped_array(mapped, start, end, info.filename)
    if not isinstance(header, dict):
        msg = "the header is missing or not a JSON object"
        raise ValueError(msg)
    return MappedArchive(header, arrays, mapped, file, starts)


def _member_start(mapped: mmap.mmap, info: zipfile.ZipInfo) -> int:
    """Where a stored member's bytes begin: after its local header, name and extra field."""
    local = mapped[info.header_offset : info.header_offset + 30]
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        msg = f"{info.filename} has no local header"
        raise ValueError(msg)
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_length + extra_length


_MAPPED_KINDS = frozenset("biuf")


def _mapped_array(
    mapped: mmap.mmap, start: int, end: int, name: str
) -> tuple[npt.NDArray[Any], int]:
    """The one-dimensional array a `.npy` member holds, as a view of the mapped file.

    Returns:
        The array, and where its data begins in the file.
    """
    member = io.BytesIO(mapped[start : min(end, start + 4096)])
    version = np.lib.format.read_magic(member)
    if version != (1, 0):
        msg = f"{name} is not a version 1.0 array"
        raise ValueError(msg)
    shape, fortran, dtype = np.lib.format.read_array_header_1_0(member, max_header_size=1024)
    if len(shape) != 1 or fortran or dtype.kind not in _MAPPED_KINDS or dtype.hasobject:
        msg = f"{name} is not a one-dimensional numeric array"
        raise ValueError(msg)
    offset = start + member.tell()
    if offset + shape[0] * dtype.itemsize > end:
        msg = f"{name} is shorter than its header says"
        raise ValueError(msg)
    return np.frombuffer(mapped, dtype=dtype, count=shape[0], offset=offset), offset


def discard(path: Path, what: str, error: BaseException) -> None:
    """Log at WARNING why a saved file is not used, and remove it so it is rebuilt.

    Anyone with the folder can change the file: it is input, not state. Removed, the next
    save replaces it instead of failing every start. A file this user may not read is
    left alone: it is not damaged, and it may be another user's to fix.
    """
    reason = str(error)[:200] or type(error).__name__
    if isinstance(error, PermissionError):
        logger.warning(
            "Not using %s %s: %s (left as it is; give this user read access to use it)",
            what,
            path,
            reason,
        )
        return
    logger.warning("Ignoring %s %s: %s (removed; it is rebuilt)", what, path, reason)
    path.unlink(missing_ok=True)


def code_key(label: str, modules: Iterable[ModuleType], extra: str = "") -> str:
    """A hash of the code that decides what a saved file holds: a change to it is a new format.

    Each saved index names the modules whose source shapes its content (the tokenizer,
    the note parser, the writer); a file saved by other code is rebuilt, not misread.

    Args:
        label: the file kind and its format's version, e.g. "lexical-index-v3".
        modules: the modules whose source the content depends on.
        extra: settings the content depends on besides the code (e.g. scoring constants).
    """
    digest = hashlib.sha256(label.encode())
    for module in modules:
        source = getattr(module, "__file__", None)
        digest.update(Path(source).read_bytes() if source else module.__name__.encode())
    digest.update(extra.encode())
    return digest.hexdigest()[:16]
