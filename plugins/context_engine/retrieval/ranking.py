"""BM25 ranking of turn groups with ``bm25s`` (fixed tokenizer and English stopword list)."""

from __future__ import annotations

from typing import Any

import bm25s

from contextlab.engines import parts

STOPWORDS = "en"


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens of ``text`` without English stopwords (bm25s' tokenizer)."""
    found = bm25s.tokenize([text], stopwords=STOPWORDS, return_ids=False, show_progress=False)
    return [t for t in found[0] if t] if found else []


def query_terms(incoming: dict[str, Any] | None, messages: list[dict[str, Any]]) -> frozenset[str]:
    """Terms of the query: the incoming user message plus the last assistant message."""
    texts = [parts.content_text(incoming)] if incoming else []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            texts.append(parts.content_text(message))
            break
    return frozenset(tokenize(" ".join(texts)))


def rank_groups(documents: list[list[str]], terms: list[str]) -> list[int]:
    """Group indices by descending BM25 score; ties (and zero scores) go to the newer group first."""
    if not documents:
        return []
    scores = [0.0] * len(documents)
    if terms:
        retriever = bm25s.BM25()
        # An empty document still needs a slot so indices line up with the groups.
        retriever.index([doc or [""] for doc in documents], show_progress=False)
        scores = [float(s) for s in retriever.get_scores(terms)]
    return sorted(range(len(documents)), key=lambda i: (-round(scores[i], 9), -i))
