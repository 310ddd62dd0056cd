"""Combining results, in one place: merge, score fusion, and hybrid search's stages.

- `merge_filter_and_search_results` (`merge.py`): the filter's documents before the search's,
  without the search's chunks of notes the filter already returned;
- `fuse` (`scores.py`): lexical and semantic rankings into one (`calibrated`, the
  original's `blend`, or `rrf`), as `MergedSemanticRetriever` runs it;
- `ranked_asked_first`, `named_first` (`asked_first.py`):
  the notes a query asks for first (a carried `#tag`'s, `[[named]]` ones), the other
  notes in the places they leave;
- `HybridStages` (`hybrid.py`): graph neighbours, recency tiers and a reranker after fusion
  (seed 002), built once per retriever and run by the factory and the merged retriever;
- `CrossEncoderReranker` (`rerankers.py`): the reranker those stages take.
"""

from langchain_vaultsearch.fusion.hybrid import GraphExpansion, HybridStages, RecencyTiers
from langchain_vaultsearch.fusion.merge import MergedResults, merge_filter_and_search_results
from langchain_vaultsearch.fusion.rerankers import CrossEncoderReranker
from langchain_vaultsearch.fusion.scores import FusionMethod, FusionWeights, fuse

__all__ = [
    "CrossEncoderReranker",
    "FusionMethod",
    "FusionWeights",
    "GraphExpansion",
    "HybridStages",
    "MergedResults",
    "RecencyTiers",
    "fuse",
    "merge_filter_and_search_results",
]
