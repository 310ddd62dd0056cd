"""The first index of a large vault, built in a separate process (and its workers).

Reading, parsing and tokenizing 6,000 notes is ~8 s of Python: in a thread of the
searching process it shared the GIL with the searches made meanwhile (each took 1.2-1.8 s
instead of ~0.2 s) and its transient memory added to the process's peak (up to 244 MB
over the baseline on obsidian-help). A child process has its own interpreter and its own
memory; it writes the index file the way `save_index` does and exits, and the search
process loads that file as a restart would.

The child runs `main` of this module in a new interpreter, not as a `multiprocessing`
target: spawning one re-imports the caller's `__main__`, which in a user's script without
a `__main__` guard runs the script again.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from langchain_vaultsearch.safe_archive import refused_folder
from langchain_vaultsearch.search.index_cache import BUILD_SHARDS_FOLDER, WORKER_FILE_PREFIX
from langchain_vaultsearch.search.parallel_build import VaultSpec, build_vault_index
from langchain_vaultsearch.vault.vault import Vault

logger = logging.getLogger(__name__)

# Log records of the child travel on its stderr as one JSON object per line.
_LOG_FIELDS = ("name", "levelno", "message")

# The child's entry: the working folder is taken off its path (a `json.py` there must not
# shadow the standard library), and this package's folder is put last, so the child finds
# the package even when the caller put it on `sys.path` by hand.
_CHILD_CODE = (
    "import sys; sys.path[:] = [p for p in sys.path if p] + [sys.argv[2]]; "
    "from langchain_vaultsearch.search.index_worker import main; sys.exit(main(sys.argv[1:2]))"
)

_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()


class IndexBuildError(RuntimeError):
    """The index process failed; the message ends with what it printed."""


def build_index_file(vault: Vault, target: Path | None, processes: int | None = None) -> Path:
    """Build the vault's index in a child process and return the file it wrote.

    Args:
        vault: the vault to index; its folder and reading rules are passed on. Its
            inclusion and exclusion rules are not: the index holds every note, and the
            process loading it marks which are searchable.
        target: where to save the index; None, or a folder that cannot be written,
            saves it to a temporary file the caller deletes.
        processes: worker processes the child indexes with (`parallel_build`); the
            machine's cores by default.

    Returns:
        The file written.

    Raises:
        IndexBuildError: when the process could not start or did not write an index.
    """
    request = {
        "root": str(vault.root),
        "include_hidden": vault.include_hidden,
        "max_note_bytes": vault.max_note_bytes,
        "target": None if target is None else str(target),
        "processes": processes,
    }
    if getattr(sys, "frozen", False) or not sys.executable:
        # A bundled app's executable is the app itself, not a Python to run code with.
        msg = f"this process cannot start a Python interpreter to index {vault.root}"
        raise IndexBuildError(msg)
    package_parent = str(Path(__file__).resolve().parents[2])
    try:
        process = subprocess.Popen(  # noqa: S603 - our own module, run by this interpreter
            [sys.executable, "-c", _CHILD_CODE, json.dumps(request), package_parent],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        msg = f"could not start {sys.executable} to index {vault.root}: {exc}"
        raise IndexBuildError(msg) from exc
    with _running_lock:
        _running.add(process)
    try:
        out, err = process.communicate()
    finally:
        with _running_lock:
            _running.discard(process)
    problems = _relay_logs(err.decode("utf-8", "replace"))
    try:
        # The last line: whatever else may write to the child's stdout comes before it.
        written = json.loads(out.decode("ascii", "replace").splitlines()[-1])
    except (IndexError, ValueError):
        written = None
    if process.returncode != 0 or not isinstance(written, str):
        tail = "\n".join(problems[-20:]) or "(nothing printed)"
        msg = f"the index process exited with code {process.returncode}:\n{tail}"
        raise IndexBuildError(msg)
    return Path(written)


def _relay_logs(stderr: str) -> list[str]:
    """Log the child's records here as if logged by this process; return the other lines."""
    other = []
    for line in stderr.splitlines():
        try:
            record = json.loads(line)
            name, level, message = (record[key] for key in _LOG_FIELDS)
        except (ValueError, TypeError, KeyError):
            other.append(line)
            continue
        logging.getLogger(str(name)).log(int(level), "%s", message)
    return other


@atexit.register
def _stop_running_builds() -> None:
    """A build nobody will load is not left running after its process exits."""
    with _running_lock:
        for process in _running:
            process.terminate()  # the child deletes a half-written file, then exits


class _JsonLines(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        line = {"name": record.name, "levelno": record.levelno, "message": record.getMessage()}
        sys.stderr.write(json.dumps(line) + "\n")


def _log_as_json() -> None:
    """Send this process's warnings to the parent on stderr (the child and its workers)."""
    logging.basicConfig(level=logging.WARNING, handlers=[_JsonLines()])


def _build(request: dict[str, object]) -> Path:
    """Index the vault the request names across processes and save the index; return where."""
    spec = VaultSpec(
        root=str(request["root"]),
        include_hidden=bool(request["include_hidden"]),
        max_note_bytes=int(str(request["max_note_bytes"])),
    )
    processes = request.get("processes")
    workers = None if processes is None else int(str(processes))
    target = None if request["target"] is None else Path(str(request["target"]))
    if target is not None:
        # Shards kept beside the index: stopped or killed, the next build takes them up.
        resume_in = None if refused_folder(target.parent) else target.parent / BUILD_SHARDS_FOLDER
        if build_vault_index(spec, target, workers, _log_as_json, resume_in):
            return target
    handle, name = tempfile.mkstemp(prefix=WORKER_FILE_PREFIX, suffix=".npz")
    os.close(handle)
    temporary = Path(name)
    try:
        if not build_vault_index(spec, temporary, workers, _log_as_json):
            msg = f"could not write the index to {temporary}"
            raise OSError(msg)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


BUILD_NICENESS = 19
"""How much the build's processes yield to others: against a process of default
priority their share of a core is about 1.5%, so a search takes that core and the build
the rest; an indexer in the background, as desktop search indexers run."""


def main(argv: list[str]) -> int:
    """Child entry point: one JSON request argument; prints the saved file's path."""
    _log_as_json()
    # The searches made meanwhile scan the notes: on two cores, sharing them equally with
    # the two workers (which inherit this), they took 1.8 s each on help x16, 1.1 s now;
    # and the build can start with the first search instead of after it.
    if hasattr(os, "nice"):
        os.nice(BUILD_NICENESS)
    # Stopped while saving, the save's cleanup still runs (SystemExit unwinds through it).
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(1))
    # JSON keeps the path ASCII whatever the console's code page (Windows).
    sys.stdout.write(json.dumps(str(_build(json.loads(argv[0])))) + "\n")
    return 0
