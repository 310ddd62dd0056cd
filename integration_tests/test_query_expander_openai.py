"""QueryExpander against a real chat model (runs when OPENAI_API_KEY is set).

A model's wording varies from run to run, so these tests assert what the expander must
guarantee whatever the wording: the answer was read (`source == "llm"`), salient terms
come from the query and leave out the search verbs, and the search still finds the notes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel

from langchain_vaultsearch import QueryExpander, TieredLexicalRetriever

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "sample-vault"
# Real round trips take longer than the seed's 4 s now and then; a timeout is not the
# behaviour under test here.
TIMEOUT_S = 30.0

pytestmark = pytest.mark.enable_socket


def test_english_query(openai_chat_model: BaseChatModel) -> None:
    expanded = QueryExpander(openai_chat_model, timeout_s=TIMEOUT_S).expand("find my piano notes")
    assert expanded.source == "llm"
    assert "piano" in expanded.salient_terms
    assert not {"find", "my"} & set(expanded.salient_terms)
    assert all(term in "find my piano notes" for term in expanded.salient_terms)
    assert 1 <= len(expanded.expanded_queries) <= 3
    assert expanded.queries[0] == "find my piano notes"


async def test_cjk_query_async(openai_chat_model: BaseChatModel) -> None:
    query = "查找我的学习笔记"
    expanded = await QueryExpander(openai_chat_model, timeout_s=TIMEOUT_S).aexpand(query)
    assert expanded.source == "llm"
    assert expanded.salient_terms
    assert all(term in query for term in expanded.salient_terms)
    assert "查找" not in expanded.salient_terms
    assert any("笔记" in term or "学习" in term for term in expanded.salient_terms)


def test_tag_query_keeps_the_tag(openai_chat_model: BaseChatModel) -> None:
    expanded = QueryExpander(openai_chat_model, timeout_s=TIMEOUT_S).expand(
        "what did we decide about #project/alpha deployment"
    )
    assert expanded.source == "llm"
    assert "#project/alpha" in expanded.salient_terms


async def test_retriever_with_a_real_expander(openai_chat_model: BaseChatModel) -> None:
    retriever = TieredLexicalRetriever(
        vault_path=str(SAMPLE_VAULT),
        k=5,
        query_expander=QueryExpander(openai_chat_model, timeout_s=TIMEOUT_S),
    )
    docs = await retriever.ainvoke("find my piano notes")
    assert retriever.last_query_expansion is not None
    assert retriever.last_query_expansion.source == "llm"
    assert docs
    assert docs[0].metadata["path"].startswith("Piano Lessons/")
