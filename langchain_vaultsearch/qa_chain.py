"""`create_vault_qa_chain`: ask your vault a question, get an answer citing your notes.

One LCEL runnable: `local_search` (named notes, tags, time range, ranked chunks) → the
`<localSearch>` context → a chat model → the answer, with the sources the context showed
and the context itself, so an app can show where the answer came from and a test can see
exactly what the model was given.

```
{"question": ...} ─ local_search ─ context, sources, documents ─┬──────────────────────┐
   (create_vault_context_chain)                                  └ prompt | llm | str ─ answer
```

In the original, an agent model reads the period off the question and passes it to the
`localSearch` tool, which answers from that period's notes alone. A plain chain makes no
tool call, so the query plan reads it, as it does for every front: "what did I decide
last week?" gets last week's notes first and the search's after them, since words are a
guess at a period ("move a task from today to tomorrow"). A `time_range` given in the
input is answered from that period's notes alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import (
    Runnable,
    RunnableConfig,
    RunnableLambda,
    RunnablePassthrough,
)

from langchain_vaultsearch.context.builder import ContextOptions
from langchain_vaultsearch.filters import FilterRetriever
from langchain_vaultsearch.limits import DEFAULT_K, checked_terms, result_limit
from langchain_vaultsearch.local_search import (
    LocalSearchResult,
    SearchRetrievers,
    arun_plan,
    plan_for,
    run_plan,
    search_retrievers,
)
from langchain_vaultsearch.query_plan import QueryPlan
from langchain_vaultsearch.retrievers.lexical import TieredLexicalRetriever
from langchain_vaultsearch.time_ranges import TimeRange
from langchain_vaultsearch.vault.vault import Vault

SYSTEM_PROMPT = (
    "You answer questions from the user's own notes (a markdown vault). Answer only from"
    " the notes in the <localSearch> context. If they do not answer the question, say so"
    " instead of guessing. Follow the citation rules in the context's <guidance>."
)
DEFAULT_PROMPT = ChatPromptTemplate.from_messages(
    [("system", SYSTEM_PROMPT), ("human", "{context}\n\n[User query]:\n{question}")]
)
"""The question comes after the context, as in the original's chain runner."""


def create_vault_qa_chain(
    *,
    llm: Runnable[LanguageModelInput, Any],
    vault_path: str | None = None,
    vault: Vault | None = None,
    retriever: BaseRetriever | None = None,
    filter_retriever: FilterRetriever | None = None,
    lexical_retriever: TieredLexicalRetriever | None = None,
    k: int = DEFAULT_K,
    context_options: ContextOptions | None = None,
    prompt: BasePromptTemplate | None = None,
) -> Runnable[Any, dict[str, Any]]:
    """A runnable that answers questions from a vault, with sources and context.

    Setup:
        `pip install "langchain-vaultsearch[openai]"` for `ChatOpenAI`, or use any chat
        model.

    Usage:
        .. code-block:: python

            from langchain_openai import ChatOpenAI
            from langchain_vaultsearch import create_vault_qa_chain

            llm = ChatOpenAI(model="gpt-4.1-mini")
            chain = create_vault_qa_chain(vault_path="~/notes", llm=llm)
            result = chain.invoke(
                {"question": "What did I decide about [[Project Alpha]] in #meetings last week?"}
            )
            result["answer"]  # "... [^1] ..."
            result["sources"]  # [{"id": 1, "title", "path", "score", "matchType"}, ...]
            result["context"]  # '<localSearch timeRange="last week"> ...'

    It is a `Runnable`: `invoke`, `ainvoke` (the filter and the search run concurrently),
    `batch`, and `stream` (first the sources and context, then the answer as the model
    writes it: add the chunks up for the whole dict). As a LangGraph node it reads the
    state's `question` and returns `answer`, `sources`, `context` and `documents`.

    Input: as for `create_vault_context_chain`.

    Args:
        llm: the chat model (any `BaseChatModel`, or a runnable around one, e.g. with
            retries or fallbacks).
        vault_path: the vault folder (or pass `vault` or retrievers).
        vault: a `Vault` shared with other retrievers.
        retriever: the main retriever; defaults to a `TieredLexicalRetriever` over the
            vault.
        filter_retriever: the filter; defaults to a `FilterRetriever` over the vault.
        lexical_retriever: the retriever of carried-tag questions planned lexical (see
            `local_search`); defaults to the lexical side of `retriever`.
        k: documents for questions without tags or time range (1..100).
        context_options: limits and wording of the context.
        prompt: a prompt with `context` and `question` variables; defaults to
            `DEFAULT_PROMPT`.

    Returns:
        The runnable; its output is `{"question", "context", "sources", "documents",
        "answer"}`.

    Raises:
        ValueError: no vault, `llm` not a runnable, `k` out of range, or a
            `prompt` without `context` and `question` variables.
    """
    if not isinstance(llm, Runnable):
        msg = f"llm must be a LangChain chat model, got {type(llm).__name__}"
        raise ValueError(msg)
    template = prompt or DEFAULT_PROMPT
    missing = {"context", "question"} - set(template.input_variables)
    if missing:
        msg = f"prompt must use the variables context and question; missing {sorted(missing)}"
        raise ValueError(msg)
    context = create_vault_context_chain(
        vault_path=vault_path,
        vault=vault,
        retriever=retriever,
        filter_retriever=filter_retriever,
        lexical_retriever=lexical_retriever,
        k=k,
        context_options=context_options,
    )
    answer = template | llm | StrOutputParser()
    return (context | RunnablePassthrough.assign(answer=answer)).with_config(run_name="vault_qa")


def create_vault_context_chain(
    *,
    vault_path: str | None = None,
    vault: Vault | None = None,
    retriever: BaseRetriever | None = None,
    filter_retriever: FilterRetriever | None = None,
    lexical_retriever: TieredLexicalRetriever | None = None,
    k: int = DEFAULT_K,
    context_options: ContextOptions | None = None,
) -> Runnable[Any, dict[str, Any]]:
    """The QA chain's first step on its own: a question in, its context and sources out.

    For chains with a prompt or a model step of their own, and for showing exactly what
    a model would be given (`vaultsearch context`). The retrievers are made once here
    and reused by every question.

    Input: a question string, or a mapping with `question` and optionally `time_range`
    (a `TimeRange` or an expression; it replaces the one found in the question, and
    that period's notes alone answer) and
    `salient_terms` (as for `local_search`). Other keys are ignored.

    Args:
        vault_path: the vault folder (or pass `vault` or retrievers).
        vault: a `Vault` shared with other retrievers.
        retriever: the main retriever; defaults to a `TieredLexicalRetriever` over the
            vault.
        filter_retriever: the filter; defaults to a `FilterRetriever` over the vault.
        lexical_retriever: the retriever of carried-tag questions planned lexical (see
            `local_search`); defaults to the lexical side of `retriever`.
        k: documents for questions without tags or time range (1..100).
        context_options: limits and wording of the context.

    Returns:
        The runnable; its output is `{"question", "context", "sources", "documents"}`.

    Raises:
        ValueError: no vault, or `k` out of range.
    """
    result_limit(k, "k")
    retrievers = search_retrievers(
        vault=vault,
        vault_path=vault_path,
        filter_retriever=filter_retriever,
        retriever=retriever,
        lexical_retriever=lexical_retriever,
    )
    step = _RetrieveStep(retrievers, k, context_options)
    return RunnableLambda(step.invoke, afunc=step.ainvoke, name="vault_local_search")


class _RetrieveStep:
    """The chain's first step: the question in, its context and sources out."""

    def __init__(
        self,
        retrievers: SearchRetrievers,
        k: int,
        context_options: ContextOptions | None,
    ) -> None:
        self._retrievers = retrievers
        self._k = k
        self._context_options = context_options

    def invoke(self, inputs: Mapping[str, Any] | str, config: RunnableConfig) -> dict[str, Any]:
        question, plan = self._plan(inputs)
        return self._output(question, run_plan(plan, self._retrievers, config=config))

    async def ainvoke(
        self, inputs: Mapping[str, Any] | str, config: RunnableConfig
    ) -> dict[str, Any]:
        question, plan = self._plan(inputs)
        return self._output(question, await arun_plan(plan, self._retrievers, config=config))

    def _plan(self, inputs: Mapping[str, Any] | str) -> tuple[str, QueryPlan]:
        question, time_range, salient_terms = _read_inputs(inputs)
        plan = plan_for(
            question,
            self._retrievers,
            time_range=time_range,
            salient_terms=salient_terms,
            k=self._k,
        )
        return question, plan

    def _output(self, question: str, result: LocalSearchResult) -> dict[str, Any]:
        built = result.build_context(self._context_options)
        sources = [
            {
                "id": source.id,
                "title": source.title,
                "path": source.path,
                "score": source.score,
                "matchType": source.match_type,
            }
            for source in built.sources
        ]
        return {
            "question": question,
            "context": built.text,
            "sources": sources,
            "documents": result.documents,
        }


def _read_inputs(
    inputs: Mapping[str, Any] | str,
) -> tuple[str, TimeRange | str | None, Sequence[str] | None]:
    """The question, the time range given (else the plan reads the question's) and salient terms.

    Raises:
        ValueError: no question, or a `time_range` that is neither a range nor a
            readable expression.
    """
    if isinstance(inputs, str):
        inputs = {"question": inputs}
    if not isinstance(inputs, Mapping):
        msg = f"the chain takes a question or a mapping with 'question', got {inputs!r}"
        raise ValueError(msg)
    question = inputs.get("question")
    if not isinstance(question, str) or not question.strip():
        msg = f"the input needs a non-empty 'question' string, got {question!r}"
        raise ValueError(msg)
    given = inputs.get("time_range")
    if given is not None and not isinstance(given, (TimeRange, str)):
        msg = f"time_range must be a TimeRange or an expression, got {given!r}"
        raise ValueError(msg)
    time_range = given or None
    return question, time_range, checked_terms(inputs.get("salient_terms"))
