"""Integration tests talk to real services; each skips, saying why, when its service is absent."""

from __future__ import annotations

import os

import pytest
from langchain_core.language_models import BaseChatModel

from langchain_vaultsearch.cli import CHAT_MODEL_ENV, DEFAULT_CHAT_MODEL


@pytest.fixture
def openai_chat_model() -> BaseChatModel:
    """A real OpenAI chat model (`$VAULTSEARCH_CHAT_MODEL`, default gpt-4.1-mini)."""
    if not os.environ.get("OPENAI_API_KEY"):
        pytest.skip("OPENAI_API_KEY is not set: the real chat model cannot be called")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=os.environ.get(CHAT_MODEL_ENV, DEFAULT_CHAT_MODEL))
