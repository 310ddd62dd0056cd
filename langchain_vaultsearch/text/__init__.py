"""Text to terms and chunks: the tokenizer and the heading-first chunker.

Public: `Chunk`, one heading-first piece of a note (id `"path#index"`).
"""

from langchain_vaultsearch.text.chunking import Chunk

__all__ = ["Chunk"]
