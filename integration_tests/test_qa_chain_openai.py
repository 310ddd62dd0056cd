"""The QA chain with a real chat model (runs when OPENAI_API_KEY is set).

The wording varies from run to run, so these tests assert what must hold whatever it is:
the answer cites with footnote markers that point at sources the context showed, and it
uses what the named notes say.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.language_models import BaseChatModel

from langchain_vaultsearch import create_vault_qa_chain

SAMPLE_VAULT = Path(__file__).resolve().parents[1] / "examples" / "sample-vault"
QUESTION = (
    "What did I decide about sessions for [[Project Alpha]] in #meeting"
    " during the week of 2024-04-15?"
)

pytestmark = pytest.mark.enable_socket


def test_answer_cites_the_meeting_notes(openai_chat_model: BaseChatModel) -> None:
    chain = create_vault_qa_chain(vault_path=str(SAMPLE_VAULT), llm=openai_chat_model)
    result = chain.invoke({"question": QUESTION})
    shown = {source["id"] for source in result["sources"]}
    cited = {int(number) for number in re.findall(r"\[\^(\d+)\]", result["answer"])}
    assert cited, result["answer"]
    assert cited <= shown
    assert "JWT" in result["answer"]
    assert "Meetings/2024-04-17 Auth Review.md" in {s["path"] for s in result["sources"]}


async def test_streamed_answer_arrives_in_pieces(openai_chat_model: BaseChatModel) -> None:
    chain = create_vault_qa_chain(vault_path=str(SAMPLE_VAULT), llm=openai_chat_model)
    pieces = [chunk.get("answer") async for chunk in chain.astream(QUESTION)]
    assert pieces[0] is None  # the sources come first
    assert len([piece for piece in pieces if piece]) > 1
