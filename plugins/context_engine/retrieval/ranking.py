"""BM25 ranking of turn groups with ``bm25s`` (fixed tokenizer and English stopword list)."""

from __future__ import annotations

from typing import Any

import bm25s

from contextlab.engines import parts

STOPWORDS = "en"


def _tokens(text: str) -> list[str]:
    found = bm25s.tokenize([text], stopwords=STOPWORDS, return_ids=False, show_progress=False)
    return [t for t in found[0] if t] if found else []


def query_terms(incoming: dict[str, Any] | None, messages: list[dict[str, Any]]) -> frozenset[str]:
    """Terms of the query: the incoming user message plus the last assistant message."""
    texts = [parts.content_text(incoming)] if incoming else []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            texts.append(parts.content_text(message))
            break
    return frozenset(_tokens(" ".join(texts)))


def rank_groups(texts: list[str], terms: list[str]) -> list[int]:
    """Group indices by descending BM25 score; ties (and zero scores) go to the newer group first."""
    if not texts:
        return []
    scores = [0.0] * len(texts)
    if terms:
        corpus = bm25s.tokenize(texts, stopwords=STOPWORDS, show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=False)
        scores = [float(s) for s in retriever.get_scores(terms)]
    return sorted(range(len(texts)), key=lambda i: (-round(scores[i], 9), -i))
