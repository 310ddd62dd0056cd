"""Vault helpers shared by the benchmark scripts, using the standard library only.

Kept free of LangChain imports on purpose: the speed harness's parent process and each measured
subprocess must import only what they measure, or the RSS numbers would include the other system.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import re
import subprocess
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
"""The repository root, so scripts find ``examples/`` and the cache wherever they run from."""

_FRONTMATTER_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_FENCE_RE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)
_INLINE_TAG_RE = re.compile(r"(?<![\w&/#`])#([^\W\d_][\w/-]*)")
_HEADING_RE = re.compile(r"^#{1,3}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_WIKILINK_RE = re.compile(r"\[\[([^\]|#^]+)(?:[#^][^\]|]*)?(?:\|[^\]]*)?\]\]")
_DAILY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def iter_note_paths(vault: Path) -> list[Path]:
    """List a vault's markdown notes the way Obsidian shows them, in a stable order.

    Folders whose name starts with a dot (``.obsidian``, ``.trash``, ``.git``) are pruned
    before descending, because Obsidian hides them and walking a large ``.git`` would
    dominate load times. The result is sorted so every consumer sees notes in one order.

    Args:
        vault: The vault root.

    Returns:
        Absolute paths of all ``*.md`` files outside dot-folders, sorted by relative path.
    """
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(vault):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath, name) for name in filenames if name.lower().endswith(".md"))
    found.sort(key=lambda p: p.relative_to(vault).as_posix())
    return found


def rel_posix(path: Path, vault: Path) -> str:
    """Return a note's vault-relative posix path, the key both systems report and judges use.

    Args:
        path: Absolute path of the note.
        vault: The vault root.

    Returns:
        The normalised relative path (see :func:`normalize_note_path`).
    """
    return normalize_note_path(path.relative_to(vault).as_posix())


def normalize_note_path(path: str) -> str:
    """Canonicalise a vault-relative path so judged paths and retrieved paths compare equal.

    macOS file systems hand back NFD file names, Windows users write backslashes, and some
    tools prefix ``./``; without this a CJK note could be counted as a miss.

    Args:
        path: A vault-relative path in any of those spellings.

    Returns:
        NFC-normalised posix path without a leading ``./``.
    """
    path = unicodedata.normalize("NFC", path).replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path


def read_note(path: Path) -> str:
    """Read a note as UTF-8, replacing undecodable bytes rather than failing the whole run.

    Args:
        path: The note's path.

    Returns:
        The note's text.
    """
    return path.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class VaultStats:
    """Size of a vault, printed next to every timing so numbers can be compared across vaults.

    Attributes:
        notes: Number of markdown notes outside dot-folders.
        size_bytes: Their total size on disk.
    """

    notes: int
    size_bytes: int

    @property
    def megabytes(self) -> float:
        """Total note size in MiB."""
        return self.size_bytes / (1024 * 1024)


def vault_stats(vault: Path) -> VaultStats:
    """Count a vault's notes and bytes with the same rules the systems use to load them.

    Args:
        vault: The vault root.

    Returns:
        The vault's note count and total size.
    """
    paths = iter_note_paths(vault)
    return VaultStats(notes=len(paths), size_bytes=sum(p.stat().st_size for p in paths))


def warm_page_cache(vault: Path) -> None:
    """Read every note once, so no measured run pays for the disk (all find them cached).

    Without it, the first run over a vault also measured the disk: the first query over
    the 100,000-note synthetic vault took 20.2 s at the default budget and 6.6 s in the
    next run, at 256 MB, which found the notes cached. A real vault's query list is
    derived by reading its notes, which warmed it; a synthetic one's is not.

    Args:
        vault: The vault root.
    """
    for path in iter_note_paths(vault):
        with open(path, "rb") as handle:
            while handle.read(1 << 20):
                pass


def load_query_list(path: Path) -> list[str]:
    """Load plain query strings for the speed benchmark from any of the formats we meet.

    Accepted, so one file can serve both scripts: a judged query file (``{"queries": [{"query":
    ...}]}``), a JSON list of strings or of objects with ``"query"``, or a text file with one
    query per line (blank lines and lines starting with ``#`` followed by a space are skipped,
    so a ``#tag`` query still works).

    Args:
        path: The file to read.

    Returns:
        The queries in file order.

    Raises:
        ValueError: If the file holds no query.
    """
    text = path.read_text(encoding="utf-8")
    queries: list[str] = []
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError:
        for raw in text.splitlines():
            line = raw.strip()
            if line and not line.startswith("# ") and line != "#":
                queries.append(line)
    else:
        items = data.get("queries", []) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise ValueError(f"{path}: expected a list of queries")
        for item in items:
            if isinstance(item, str):
                queries.append(item)
            elif isinstance(item, dict) and isinstance(item.get("query"), str):
                queries.append(item["query"])
    if not queries:
        raise ValueError(f"{path}: no queries found")
    return queries


def split_frontmatter(text: str) -> tuple[str, str]:
    """Separate YAML frontmatter from the body without a YAML parser (stdlib only).

    Args:
        text: A note's full text.

    Returns:
        ``(frontmatter, body)``; the frontmatter is empty when the note has none.
    """
    match = _FRONTMATTER_RE.match(text)
    if not match:
        return "", text
    return match.group(1), text[match.end() :]


def frontmatter_tags(frontmatter: str) -> list[str]:
    """Extract ``tags`` from frontmatter in its list, flow-list and string spellings.

    Args:
        frontmatter: The YAML text between the ``---`` fences.

    Returns:
        Tag names without ``#``, in order of appearance.
    """
    tags: list[str] = []
    lines = frontmatter.splitlines()
    for i, line in enumerate(lines):
        key, sep, value = line.partition(":")
        if not sep or key.strip().lower() not in ("tags", "tag"):
            continue
        value = value.strip()
        if value:
            value = value.strip("[]")
            tags.extend(t.strip(" '\"#") for t in re.split(r"[,\s]+", value))
        else:
            for item in lines[i + 1 :]:
                stripped = item.strip()
                if not stripped.startswith("- "):
                    break
                tags.append(stripped[2:].strip(" '\"#"))
        break
    return [t for t in tags if t]


def _frontmatter_title(frontmatter: str) -> str | None:
    for line in frontmatter.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "title":
            value = value.strip().strip("'\"")
            return value or None
    return None


def _is_useful_title(title: str, folders: tuple[str, ...]) -> bool:
    """Whether a note title makes a query a user might type (not a date, template or stub)."""
    if _DAILY_RE.match(title) or "{{" in title or title.lower().startswith("untitled"):
        return False
    if any(folder.lower() == "templates" for folder in folders):
        return False
    return any(ch.isalpha() for ch in title)


def derive_queries(vault: Path, n: int = 30, seed: int = 0) -> list[str]:
    """Build a deterministic query list for a vault that ships without one.

    The speed benchmark needs queries that hit the vault, so we take them from the vault
    itself: note titles, word pairs from titles, the most used tags, headings, and the most
    linked notes as ``[[mentions]]``. Inputs are sorted and sampled with a fixed seed, so the
    same vault always yields the same list.

    Args:
        vault: The vault root.
        n: How many queries to return (fewer if the vault is tiny).
        seed: Seed for the sampling.

    Returns:
        Up to ``n`` distinct queries.
    """
    titles: set[str] = set()
    tag_counts: Counter[str] = Counter()
    heading_counts: Counter[str] = Counter()
    link_counts: Counter[str] = Counter()
    stems: set[str] = set()
    for path in iter_note_paths(vault):
        text = read_note(path)
        frontmatter, body = split_frontmatter(text)
        stems.add(path.stem)
        title = _frontmatter_title(frontmatter) or path.stem
        if _is_useful_title(title, path.relative_to(vault).parts[:-1]):
            titles.add(title)
        body = _FENCE_RE.sub("", body)
        tag_counts.update(t.lower() for t in frontmatter_tags(frontmatter))
        tag_counts.update(t.lower() for t in _INLINE_TAG_RE.findall(body))
        heading_counts.update(h.strip() for h in _HEADING_RE.findall(body))
        link_counts.update(target.strip() for target in _WIKILINK_RE.findall(body))

    rng = random.Random(seed)
    sorted_titles = sorted(titles)
    # Headings that head most notes ("Notes", "Tasks") make poor queries; keep rarer ones.
    headings = sorted(h for h, c in heading_counts.items() if 1 <= c <= max(3, len(stems) // 20))
    top_tags = [t for t, _ in sorted(tag_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:25]]
    linked = [
        t
        for t, _ in sorted(link_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if t in stems or t in titles
    ][:15]

    def sample(items: list[str], count: int) -> list[str]:
        return rng.sample(items, min(count, len(items)))

    pairs: list[str] = []
    for title in sample(sorted_titles, 6):
        words = [w for w in re.findall(r"\w+", title.lower()) if len(w) > 2]
        if len(words) >= 2:
            start = rng.randrange(len(words) - 1)
            pairs.append(" ".join(words[start : start + 2]))
    plan = (
        sample(sorted_titles, round(n * 0.4))
        + pairs
        + [f"#{t}" for t in sample(top_tags, round(n * 0.2))]
        + sample(headings, round(n * 0.1))
        + [f"[[{t}]]" for t in sample(linked, round(n * 0.1))]
    )
    plan += sample(sorted_titles, n)  # top up from titles when a category ran short
    queries: list[str] = []
    for query in plan:
        if query and query not in queries:
            queries.append(query)
        if len(queries) == n:
            break
    return queries


DEFAULT_RETRIEVER = "langchain_vaultsearch:TieredLexicalRetriever"
"""The system under test, as ``module:Class``; the scripts accept another for comparisons."""


def load_retriever_class(spec: str) -> Callable[..., Any]:
    """Import the retriever class named ``module:Class``.

    Resolved at run time rather than imported at module top so that the speed harness's
    parent never loads the system it measures, and so a branch or an alternative
    implementation can be compared with ``--retriever``.

    Args:
        spec: ``"package.module:ClassName"``.

    Returns:
        The class, called as ``cls(vault_path=str, k=int)``.

    Raises:
        ValueError: If ``spec`` is not of the form ``module:Class``.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected module:Class, got {spec!r}")
    cls: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
    return cls


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Render rows as a plain-text table with aligned columns (first column left-aligned).

    Plain text so results paste cleanly into issues, pull requests and terminals alike.

    Args:
        headers: Column titles.
        rows: Cell strings, one sequence per row.

    Returns:
        The table, one line per row, with a rule under the header.
    """
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        out = [cells[0].ljust(widths[0])]
        out += [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def run_worker(module: str, spec: dict[str, Any], label: str) -> dict[str, Any]:
    """Run `python -m module --worker SPEC` in a fresh interpreter; its last stdout line.

    A fresh process per measurement, so peak RSS and imports are that run's alone.

    Raises:
        SystemExit: the worker failed (its stderr's end is in the message).
    """
    done = subprocess.run(
        [sys.executable, "-m", module, "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"worker {label} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
