"""Fake chat models for the query-expansion tests (unit tests only, never the package)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

# Seed 001's worked example, as a model would answer it.
PIANO_REPLY = """\
<salient><term>piano</term><term>notes</term></salient>
<queries><query>piano lesson notes</query><query>piano practice sheets</query></queries>
<expanded><term>music</term><term>sheet</term><term>practice</term><term>lesson</term></expanded>
"""


class ScriptedChatModel(FakeListChatModel):
    """`FakeListChatModel` that counts sync and async calls, can raise, and sleeps.

    The sync path sleeps with `time.sleep` (a model blocking its thread); the async path
    with `asyncio.sleep`, so a cancelled call really stops.
    """

    error: Exception | None = None
    sync_calls: int = 0
    async_calls: int = 0

    def _call(self, *args: Any, **kwargs: Any) -> str:
        self.sync_calls += 1
        if self.sleep is not None:
            time.sleep(self.sleep)
        return self._reply()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.async_calls += 1
        if self.sleep is not None:
            await asyncio.sleep(self.sleep)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self._reply()))])

    def _reply(self) -> str:
        if self.error is not None:
            raise self.error
        response = self.responses[self.i]
        self.i = (self.i + 1) % len(self.responses)
        return response


class StubbornChatModel(ScriptedChatModel):
    """An async model that ignores the first cancellation and keeps going."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.async_calls += 1
        try:
            await asyncio.sleep(self.sleep or 0)
        except asyncio.CancelledError:
            await asyncio.sleep(self.sleep or 0)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self._reply()))])
