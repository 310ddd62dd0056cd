"""The public API: pinned, so a change to it is a decision.

The top level holds what a user types in the first hour; the documented submodules hold
the rest, and every type of the package that a public signature names is exported from
one of them, so a user can always import what a function returns or takes.
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from importlib.metadata import version
from types import ModuleType
from typing import Any

import langchain_vaultsearch

TOP_LEVEL = {
    "EmbeddingModelMismatchError",
    "FilterRetriever",
    "IndexLockedError",
    "KeywordDocumentRetriever",
    "MergedSemanticRetriever",
    "MissingExtraError",
    "QueryExpander",
    "RetrieverFactory",
    "SemanticIndexUnavailable",
    "TieredLexicalRetriever",
    "TimeRange",
    "Vault",
    "VaultIndex",
    "VaultSearch",
    "VaultSemanticRetriever",
    "__version__",
    "alocal_search",
    "create_mcp_server",
    "create_vault_context_chain",
    "create_vault_qa_chain",
    "local_search",
    "merge_filter_and_search_results",
}
SUBMODULES = {
    "context": {
        "ContextOptions",
        "ContextSource",
        "LocalSearchContext",
        "build_local_search_context",
        "format_local_search_context",
        "sanitize_for_citations",
    },
    "chunk_store": {
        "ChunkLocation",
        "ChunkReader",
        "ChunkRecord",
        "IndexedChunks",
        "KeywordHit",
        "KeywordIndex",
        "KeywordScorer",
        "Postings",
        "QueryBoosts",
        "ExportReport",
        "JsonlChunkStore",
        "RetrievalProfile",
        "StoreProblem",
        "export_vault_chunks",
    },
    "expansion": {"ExpandedQuery", "QueryExpander", "QueryExpanderLike"},
    "semantic": {
        "ConceptVocabulary",
        "EmbeddingModelMismatchError",
        "IndexLockedError",
        "IndexProgress",
        "MissingExtraError",
        "RefreshReport",
        "SemanticIndexBusy",
        "SemanticIndexUnavailable",
        "VaultIndex",
        "VerifyReport",
        "load_embeddings",
    },
    "time_ranges": {"TimeRange", "find_time_expression", "parse_time_expression"},
    "filters": {"FilterResult", "FilterRetriever"},
    "local_search": {"LocalSearchResult", "alocal_search", "local_search"},
    "query_plan": {"Available", "QueryPlan", "Route", "SearchMode", "plan_query"},
    "service": {"HybridOptions", "IndexSummary", "VaultSearch"},
    "fusion": {
        "CrossEncoderReranker",
        "FusionMethod",
        "FusionWeights",
        "GraphExpansion",
        "HybridStages",
        "MergedResults",
        "RecencyTiers",
        "fuse",
        "merge_filter_and_search_results",
    },
    "vault": {
        "FolderChanges",
        "FolderWatcher",
        "Heading",
        "Link",
        "LinkGraph",
        "NoteInfo",
        "ParsedNote",
        "SavedNotes",
        "TagCatalog",
        "Vault",
        "VaultChanges",
    },
    "search": {
        "ChunkCache",
        "IndexPolicy",
        "IndexedChunk",
        "MemoryBudget",
        "RankedChunk",
        "SearchCore",
        "SearchOptions",
        "SearchResult",
    },
    "text": {"Chunk"},
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"langchain_vaultsearch.{name}")


def test_the_top_level_is_exactly_the_first_hour_names() -> None:
    assert set(langchain_vaultsearch.__all__) == TOP_LEVEL
    assert len(langchain_vaultsearch.__all__) == len(TOP_LEVEL)
    for name in TOP_LEVEL:
        assert getattr(langchain_vaultsearch, name) is not None


def test_each_documented_submodule_exports_exactly_its_names() -> None:
    for name, names in SUBMODULES.items():
        module = _module(name)
        assert set(module.__all__) == names, name
        for exported in names:
            assert getattr(module, exported) is not None, f"{name}.{exported}"


def _exported() -> dict[int, str]:
    found = {id(getattr(langchain_vaultsearch, n)): n for n in TOP_LEVEL if n != "__version__"}
    for module_name, names in SUBMODULES.items():
        module = _module(module_name)
        for name in names:
            found.setdefault(id(getattr(module, name)), f"{module_name}.{name}")
    return found


def _hints(function: Any, owner: ModuleType) -> list[Any]:
    try:
        return list(typing.get_type_hints(function).values())
    except (NameError, TypeError):
        # A name imported only for type checking: read the annotations' own words.
        annotations = getattr(function, "__annotations__", {})
        words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(map(str, annotations.values())))
        return [getattr(owner, word) for word in words if hasattr(owner, word)]


def _package_types(hint: Any) -> set[type]:
    found: set[type] = set()
    if inspect.isclass(hint) and hint.__module__.startswith("langchain_vaultsearch"):
        found.add(hint)
    for argument in typing.get_args(hint):
        found |= _package_types(argument)
    return found


def _signature_types(obj: Any) -> set[type]:
    owner = importlib.import_module(obj.__module__)
    callables = [obj]
    if inspect.isclass(obj):
        callables = [
            member
            for name, member in vars(obj).items()
            if (not name.startswith("_") or name == "__init__") and callable(member)
        ]
        properties = [m.fget for m in vars(obj).values() if isinstance(m, property)]
        callables += [getter for getter in properties if getter is not None]
        fields = getattr(obj, "model_fields", {})
        found = {t for field in fields.values() for t in _package_types(field.annotation)}
    else:
        found = set()
    for member in callables:
        for hint in _hints(member, owner):
            found |= _package_types(hint)
    return found


def test_every_package_type_in_a_public_signature_is_exported() -> None:
    exported = _exported()
    missing = set()
    for public in list(exported):
        for found in _signature_types(_object(exported[public])):
            if id(found) not in exported:
                missing.add(f"{found.__module__}.{found.__qualname__} (in {exported[public]})")
    assert not missing, sorted(missing)


def _object(path: str) -> Any:
    module_name, _, name = path.rpartition(".")
    module = _module(module_name) if module_name else langchain_vaultsearch
    return getattr(module, name)


def test_version_is_the_installed_distributions() -> None:
    assert langchain_vaultsearch.__version__ == version("langchain-vaultsearch")
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", langchain_vaultsearch.__version__)
