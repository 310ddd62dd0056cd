"""The cross-encoder reranker with a real model, read from a local folder.

No cross-encoder weights are installable from the package registries, so the model comes
from `VAULTSEARCH_RERANKER_MODEL` (e.g. a downloaded `cross-encoder/ms-marco-MiniLM-L-6-v2`
folder); without it the test skips and says so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from langchain_vaultsearch import RetrieverFactory
from langchain_vaultsearch.fusion.rerankers import RERANKER_MODEL_VARIABLE, CrossEncoderReranker
from tests.conftest import SAMPLE_VAULT


@pytest.fixture(scope="module")
def reranker() -> CrossEncoderReranker:
    folder = os.environ.get(RERANKER_MODEL_VARIABLE)
    if not folder or not Path(folder).is_dir():
        pytest.skip(f"{RERANKER_MODEL_VARIABLE} does not name a local cross-encoder folder")
    return CrossEncoderReranker(model_name_or_path=folder)


def test_a_real_cross_encoder_reranks_hybrid_results(reranker: CrossEncoderReranker) -> None:
    factory = RetrieverFactory(vault_path=str(SAMPLE_VAULT), mode="hybrid", reranker=reranker)
    docs = factory.invoke("how do I configure OAuth callback URLs in Next.js?", k=10)
    assert docs[0].metadata["path"] == "Projects/Alpha/Next.js OAuth Setup.md"
    reranked = [d for d in docs if "relevance_score" in d.metadata]
    assert len(reranked) == min(10, len(docs))
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == 1.0
