"""Index files in folders users sync and share: written atomically, read as untrusted input.

Both saved indexes (the vault's lexical index, the chunk store's keyword index) are one
`.npz` archive: a `header.json` member and one-dimensional arrays. Written to a temporary
name and renamed into place, so a crash never leaves half a file; read with
`allow_pickle=False`, sizes checked before anything is decompressed, each array checked
for exactly the type it was saved with.
"""

from __future__ import annotations

import io
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import numpy as np
import numpy.typing as npt

MAX_INFLATION = 50
"""How many times its size a saved index may inflate to (ours: a few times)."""
INFLATION_ALLOWANCE = 16 * 1024 * 1024
"""Bytes of inflation any saved index may have, for small files."""
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


def write_npz(out: BinaryIO, header: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
    """Write what `np.savez` would, streamed: the header as JSON text, arrays uncopied.

    `np.savez` needs the header as an array (JSON as a `str`, then bytes) and copies
    every array into a bytes object on the way out: 25 MB of transient memory on a
    6,280-note vault, which the allocator kept after the save. `np.load` reads the
    result the same way, the header member as bytes.
    """
    with zipfile.ZipFile(out, "w", allowZip64=True) as archive:
        with io.TextIOWrapper(archive.open(HEADER, "w", force_zip64=True), "utf-8") as text:
            json.dump(header, text)
        for name, array in arrays.items():
            contiguous = np.ascontiguousarray(array)
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy_header = np.lib.format.header_data_from_array_1_0(contiguous)
                np.lib.format.write_array_header_1_0(member, npy_header)
                member.write(contiguous.data.cast("B"))


def write_atomically(
    path: Path, header: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]
) -> None:
    """Write an archive to a temporary name beside `path` and rename it into place.

    Raises:
        OSError: the folder cannot be made or written (nothing is left behind).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            write_npz(out, header, arrays)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def discard(path: Path, what: str, error: BaseException) -> None:
    """Log at WARNING why a saved file is not used, and remove it so it is rebuilt.

    Anyone with the folder can change the file: it is input, not state. Removed, the next
    save replaces it instead of failing every start.
    """
    reason = str(error)[:200] or type(error).__name__
    logger.warning("Ignoring %s %s: %s (removed; it is rebuilt)", what, path, reason)
    path.unlink(missing_ok=True)
