"""The vector index: the vault's chunks embedded with any LangChain model, in any store.

Public: `VaultIndex` and what its methods return (`IndexProgress`, `RefreshReport`,
`VerifyReport`, `ConceptVocabulary`), `load_embeddings` (a model from a spec such as
`huggingface:NAME`), and the errors a semantic step can raise.
"""

from langchain_vaultsearch.semantic.concepts import ConceptVocabulary
from langchain_vaultsearch.semantic.embeddings import MissingExtraError, load_embeddings
from langchain_vaultsearch.semantic.errors import SemanticIndexBusy, SemanticIndexUnavailable
from langchain_vaultsearch.semantic.index import (
    EmbeddingModelMismatchError,
    IndexProgress,
    RefreshReport,
    VaultIndex,
    VerifyReport,
)
from langchain_vaultsearch.semantic.lock import IndexLockedError

__all__ = [
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
]
