"""The docs' options tables are the classes' fields (issue 25).

An options table is written by hand and a field is added in code: the two drift apart
silently (docs/python-api.md's table lacked `index_policy`). So every table of the docs
whose header reads `| `ClassName` option | default | ... |` is checked against the class it
names: its option names are the class's public fields (pydantic fields the package declares,
not LangChain's `name`/`tags`/`metadata`; a dataclass's init fields; otherwise the keyword
parameters of `__init__`), and each default cell is the field's default, as a Python
literal (`30`, `0.1`, `None`, `"minmax"`, `[]`, `448_000`), a call of a name of the class's
module (`RetrievalProfile()`) or `—` for an option without a default. Adding, removing or
re-defaulting a field without its table fails here, naming the table and the field.

docs/large-vaults.md's memory-budget table (each share of `MemoryBudget` at the default
`memory_budget_mb`) is a table of fields too, checked the same way.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from langchain_vaultsearch.search.memory_budget import DEFAULT_MEMORY_BUDGET_MB, MemoryBudget

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
NOT_CHECKED = frozenset({"design.md"})
"""design.md describes the original system's options, not this package's classes."""

PUBLIC_MODULES = (
    "langchain_vaultsearch",
    "langchain_vaultsearch.chunk_store",
    "langchain_vaultsearch.context",
    "langchain_vaultsearch.expansion",
    "langchain_vaultsearch.filters",
    "langchain_vaultsearch.fusion.hybrid",
    "langchain_vaultsearch.fusion.rerankers",
    "langchain_vaultsearch.search",
    "langchain_vaultsearch.semantic",
    "langchain_vaultsearch.time_ranges",
)
"""Where a table's class name is looked up: the public names (`__all__`) of these."""

DOCUMENTED_CLASSES = frozenset(
    {
        "ContextOptions",
        "FilterRetriever",
        "KeywordDocumentRetriever",
        "MergedSemanticRetriever",
        "QueryExpander",
        "RetrievalProfile",
        "RetrieverFactory",
        "TieredLexicalRetriever",
        "VaultIndex",
        "VaultSemanticRetriever",
    }
)
"""Classes whose options table must exist: deleting one fails rather than passing empty."""

REQUIRED = "—"
"""The default cell of an option that has none (it must be given)."""

_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")
_DELIMITER_CELL = re.compile(r"^:?-{3,}:?$")
_CLASS_HEADER = re.compile(r"^`(?P<name>[A-Za-z_]\w*)` options?$")
_OPTION_NAMES = re.compile(r"^`(?P<first>\w+)`(?:\s*/\s*`\w+`)*$")
_CODE_SPAN = re.compile(r"^`([^`]+)`$")


class _Required:
    """The default of a field that has none (pydantic's `PydanticUndefined`, `MISSING`)."""

    def __repr__(self) -> str:
        return REQUIRED


NO_DEFAULT = _Required()


# ------------------------------------------------------------------------------ tables


@dataclass(frozen=True)
class Table:
    """A markdown table: its page, the line of its header, header cells and body rows."""

    page: Path
    line: int
    header: list[str]
    rows: list[tuple[int, list[str]]]  # (line, cells)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO).as_posix()}:{self.line}"


def cells(line: str) -> list[str]:
    """A table row's cells, stripped; `\\|` inside a cell is not a separator."""
    stripped = line.strip()
    if not stripped.startswith("|"):
        return []
    inner = stripped[1:-1] if stripped.endswith("|") and len(stripped) > 1 else stripped[1:]
    return [cell.strip() for cell in _CELL_SEPARATOR.split(inner)]


def tables(page: Path) -> list[Table]:
    """Every table of a page outside fenced code: a header row, a delimiter row, a body."""
    found: list[Table] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    fence: str | None = None
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None:
            if stripped.startswith(fence):
                fence = None
        elif index + 1 < len(lines) and _is_delimiter(lines[index + 1]) and cells(stripped):
            rows = []
            end = index + 2
            while end < len(lines) and lines[end].strip().startswith("|"):
                rows.append((end + 1, cells(lines[end])))
                end += 1
            found.append(Table(page, index + 1, cells(stripped), rows))
            index = end
            continue
        index += 1
    return found


def _is_delimiter(line: str) -> bool:
    row = cells(line)
    return bool(row) and all(_DELIMITER_CELL.match(cell) for cell in row)


def documented_pages() -> list[Path]:
    pages = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
    return [page for page in pages if page.name not in NOT_CHECKED]


def options_tables() -> list[Table]:
    """Tables whose second column is `default`: each lists some class's options."""
    return [
        table
        for page in documented_pages()
        for table in tables(page)
        if len(table.header) >= 2 and table.header[1].lower() == "default"
    ]


# ----------------------------------------------------------------------------- classes


def public_class(name: str) -> type:
    """The class a table names, from the package's public modules (exactly one)."""
    found = {
        id(obj): obj
        for module in map(importlib.import_module, PUBLIC_MODULES)
        if name in getattr(module, "__all__", ()) and inspect.isclass(obj := getattr(module, name))
    }
    assert len(found) == 1, f"{name} is not one public class of {PUBLIC_MODULES}"
    return next(iter(found.values()))


def class_options(cls: type) -> dict[str, Any]:
    """The options a user passes to `cls(...)`, with their defaults (`NO_DEFAULT` if none).

    Pydantic models: the fields the package declares; fields inherited from a class outside
    it (LangChain's `BaseRetriever`: `name`, `tags`, `metadata`) are LangChain's to document.
    Dataclasses: their init fields. Anything else: the parameters of `__init__`.
    """
    if issubclass(cls, BaseModel):
        foreign = {
            name
            for base in cls.__mro__[1:]
            if isinstance(base, type)
            and issubclass(base, BaseModel)
            and not base.__module__.startswith("langchain_vaultsearch")
            for name in base.model_fields
        }
        return {
            name: NO_DEFAULT if info.is_required() else info.get_default(call_default_factory=True)
            for name, info in cls.model_fields.items()
            if name not in foreign and not name.startswith("_")
        }
    if dataclasses.is_dataclass(cls):
        return {f.name: _dataclass_default(f) for f in dataclasses.fields(cls) if f.init}
    parameters = inspect.signature(cls).parameters.values()
    return {
        p.name: NO_DEFAULT if p.default is inspect.Parameter.empty else p.default
        for p in parameters
        if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    }


def _dataclass_default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return NO_DEFAULT


def documented_default(cell: str, cls: type) -> Any:
    """The value a default cell shows: `—`, a literal, or a call such as `GraphExpansion()`.

    Backticks around the value are optional (`30` and 30 alike). A call is evaluated in the
    class's module, where the names its fields' defaults use are defined.
    """
    if cell == REQUIRED:
        return NO_DEFAULT
    match = _CODE_SPAN.match(cell)
    text = match[1] if match else cell
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    tree = ast.parse(text, mode="eval")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        pytest.fail(f"a default is a literal, a call such as `Profile()`, or {REQUIRED}: {cell!r}")
    namespace = vars(importlib.import_module(cls.__module__))
    return eval(compile(tree, cell, "eval"), dict(namespace))  # noqa: S307 (the repo's docs)


def same_default(documented: Any, actual: Any) -> bool:
    """Equal and of the same type: a table saying `1` for a default of `True` is wrong."""
    return type(documented) is type(actual) and documented == actual


@dataclass(frozen=True)
class Row:
    """One option row: the names it covers (`vault_path` / `vault`) and its default cell."""

    line: int
    names: tuple[str, ...]
    default: str


def option_rows(table: Table) -> list[Row]:
    rows = []
    for line, row in table.rows:
        assert len(row) == len(table.header), f"{table.where}: line {line} has {len(row)} cells"
        assert _OPTION_NAMES.match(row[0]), (
            f"{table.where}: line {line}'s first cell names options as `a` or `a` / `b`, "
            f"not {row[0]!r}"
        )
        rows.append(Row(line, tuple(re.findall(r"`(\w+)`", row[0])), row[1]))
    return rows


def table_class(table: Table) -> type:
    match = _CLASS_HEADER.match(table.header[0])
    assert match, (
        f"{table.where}: an options table's first header cell names its class "
        f"(`ClassName` option), not {table.header[0]!r}"
    )
    return public_class(match["name"])


def drift(table: Table) -> list[str]:
    """What differs between an options table and its class, one line each (empty: none)."""
    cls = table_class(table)
    actual = class_options(cls)
    problems: list[str] = []
    seen: set[str] = set()
    for row in option_rows(table):
        for name in row.names:
            if name in seen:
                problems.append(f"line {row.line}: `{name}` is listed twice")
            seen.add(name)
            if name not in actual:
                problems.append(f"line {row.line}: `{name}` is not an option of {cls.__name__}")
                continue
            shown = documented_default(row.default, cls)
            if not same_default(shown, actual[name]):
                problems.append(
                    f"line {row.line}: `{name}` defaults to {actual[name]!r}, "
                    f"the table says {row.default}"
                )
    problems.extend(
        f"`{name}` (default {actual[name]!r}) is missing" for name in actual if name not in seen
    )
    return problems


# ------------------------------------------------------------------------------- tests

OPTIONS_TABLES = options_tables()


def test_the_docs_have_an_options_table_for_each_documented_class() -> None:
    named = [_CLASS_HEADER.match(table.header[0]) for table in OPTIONS_TABLES]
    names = [match["name"] for match in named if match]
    assert set(names) >= DOCUMENTED_CLASSES, f"no table for {DOCUMENTED_CLASSES - set(names)}"
    assert len(names) == len(set(names)), "a class has two options tables"


@pytest.mark.parametrize("table", OPTIONS_TABLES, ids=[table.where for table in OPTIONS_TABLES])
def test_an_options_table_lists_its_class_fields_and_defaults(table: Table) -> None:
    problems = drift(table)
    assert not problems, f"{table.where} ({table.header[0]}):\n" + "\n".join(problems)


def test_the_table_reader_follows_markdown(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "| `Thing` option | default | what it does |\n|---|:---:|---|\n"
        "| `a` / `b` | `None` | one \\| two |\n| `c` | 3 | three |\n\nprose\n\n"
        "```text\n| not | a |\n|---|---|\n```\n",
        encoding="utf-8",
    )
    [table] = tables(page)
    assert (table.line, table.header) == (1, ["`Thing` option", "default", "what it does"])
    assert table.rows == [(3, ["`a` / `b`", "`None`", "one \\| two"]), (4, ["`c`", "3", "three"])]
    assert [(r.names, r.default) for r in option_rows(table)] == [
        (("a", "b"), "`None`"),
        (("c",), "3"),
    ]


@dataclass
class _Example:
    """A stand-in class for the checker's own test."""

    count: int = 3
    name: str = "x"
    items: list[str] = dataclasses.field(default_factory=list)
    needed: bool = dataclasses.field(default=False, init=False)


def test_drift_names_added_removed_and_changed_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(f"{__name__}.public_class", lambda _name: _Example)
    page = tmp_path / "page.md"
    page.write_text(
        "| `Example` option | default | |\n|---|---|---|\n"
        '| `count` | `True` | |\n| `name` | `"x"` | |\n| `gone` | 1 | |\n',
        encoding="utf-8",
    )
    [table] = tables(page)
    assert drift(table) == [
        "line 3: `count` defaults to 3, the table says `True`",
        "line 5: `gone` is not an option of _Example",
        "`items` (default []) is missing",
    ]


def test_defaults_read_as_literals_calls_or_required() -> None:
    from langchain_vaultsearch import RetrieverFactory
    from langchain_vaultsearch.fusion.hybrid import GraphExpansion

    assert documented_default("448_000", RetrieverFactory) == 448_000
    assert documented_default('`"minmax"`', RetrieverFactory) == "minmax"
    assert documented_default("`GraphExpansion()`", RetrieverFactory) == GraphExpansion()
    assert documented_default(REQUIRED, RetrieverFactory) is NO_DEFAULT
    assert not same_default(documented_default("1", RetrieverFactory), True)


# -------------------------------------------------------------------- the memory budget

_SHARE = re.compile(r"^(?P<numerator>\d+)/(?P<denominator>\d+) \(`(?P<field>\w+)`\)$")
_MB = 1024 * 1024


def test_the_memory_budget_table_is_memory_budget_at_its_default() -> None:
    """docs/large-vaults.md: each share's field, fraction and size at 512 MB, as computed."""
    [table] = [t for t in tables(DOCS / "large-vaults.md") if t.header[0] == "share"]
    assert table.header[1] == f"of {DEFAULT_MEMORY_BUDGET_MB} MB"
    budget = MemoryBudget.from_mb(DEFAULT_MEMORY_BUDGET_MB)
    shares = {f.name for f in dataclasses.fields(MemoryBudget)} - {"total_bytes"}
    documented = {}
    for line, (share, size, _holds) in table.rows:
        match = _SHARE.match(share)
        assert match, f"line {line}: a share reads `1/8 (`field`)`, not {share!r}"
        name = match["field"]
        documented[name] = size
        fraction = int(match["numerator"]) / int(match["denominator"])
        assert getattr(budget, name) == budget.total_bytes * fraction, f"line {line}: {name}"
        assert size == f"{getattr(budget, name) // _MB} MB", f"line {line}: {name}'s size"
    assert set(documented) == shares
