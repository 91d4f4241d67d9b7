"""BM25 ranking of turn groups with ``bm25s`` (fixed tokenizer and English stopword list)."""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter, deque
from functools import partial
from itertools import chain, repeat
from typing import Any

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

from contextlab.engines import parts

STOPWORDS = "en"


# bm25s' tokenizer for one text without its per-call overhead (a progress object, a stopword set
# and a vocabulary built per call: most of the time for the short texts of a turn group). Same
# pattern, lowercasing and stopword list; a test compares it with ``bm25s.tokenize``. bm25s'
# ``(?u)\b\w\w+\b`` finds the maximal runs of two or more word characters, as ``\w{2,}`` does
# (a greedy run of word characters ends where a word boundary is); the leading ``\b`` made the
# regex engine try every position.
_SPLIT = re.compile(r"\w{2,}").findall
_STOPWORDS = frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lowercased word tokens of ``text`` without English stopwords (bm25s' tokenizer)."""
    return [t for t in _SPLIT(text.lower()) if t not in _STOPWORDS]


TermCounts = tuple[tuple[str, ...], "array[int]"]
"""A document's distinct terms and how often each occurs. A tuple of strings (untracked by the garbage
collector once seen) and an ``array`` (one object to it, whose elements it never visits), where a
``Counter`` per document (a long session indexes thousands) had every key and count visited by every
full collection."""


def term_counts(tokens: list[str]) -> TermCounts:
    """The :data:`TermCounts` of a token list (terms in order of first occurrence)."""
    counts = Counter(tokens)
    return tuple(counts), array("q", counts.values())


def elements(document: TermCounts) -> list[str]:
    """Each term of ``document`` as often as it occurs (grouped by term: BM25 ignores word order)."""
    return list(chain.from_iterable(map(repeat, *document)))


def query_terms(
    incoming: dict[str, Any] | None,
    messages: list[dict[str, Any]],
    memo: dict[str, frozenset[str]] | None = None,
) -> frozenset[str]:
    """Terms of the query: the incoming user message plus the last assistant message.

    Words never span the space that joins the two texts, so the terms are the union of each text's
    terms; ``memo`` (text -> terms) lets a caller tokenize each text once.
    """
    texts = [parts.content_text(incoming)] if incoming else []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            texts.append(parts.content_text(message))
            break
    if memo is None:
        return frozenset(tokenize(" ".join(texts)))
    found: frozenset[str] = frozenset()
    for text in texts:
        terms = memo.get(text)
        if terms is None:
            if len(memo) >= 256:
                memo.clear()  # the query texts of a session change slowly: a small memo is enough
            terms = memo[text] = frozenset(tokenize(text))
        found |= terms
    return found


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


def score_order(scores: Any) -> list[int]:
    """``sorted(range(n), key=lambda i: (-round(scores[i], 9), -i))`` in numpy, with the same result."""
    return order_by_score(np.asarray(scores, dtype=np.float64)).tolist()  # type: ignore[no-any-return]


def order_by_score(values: Any, single: Any = None) -> Any:
    """:func:`score_order` of a float64 array, as an int64 array.

    ``round(·, 9)`` is monotone, so it can only merge scores that are neighbours in the plain
    descending order and at most 1e-9 apart. The order is the plain one (ties: newer first), and
    only the runs of neighbours that close are re-sorted with the exact Python key. ``single``:
    the same scores as a float32 array, all >= 0 (BM25's), which lets the plain order come from
    one sort of integers.
    """
    n = len(values)
    if not n:
        return np.zeros(0, dtype=np.int64)
    if single is not None:
        order = _plain_order_nonnegative(single)
    else:
        newest_first = np.arange(n - 1, -1, -1)
        # Stable sort of the newest-first indices by descending score: ties keep newer first.
        order = newest_first[np.argsort(-values[newest_first], kind="stable")]
    ranked = values[order]
    gaps = ranked[:-1] - ranked[1:]
    close = gaps <= 2e-9  # neighbours that may share a rounded value (equal ones do)
    merged = close & (gaps > 0)  # ... while the plain order tells them apart
    if not merged.any():
        return order
    # Maximal runs of close neighbours: pair j joins positions j and j + 1.
    edges = np.diff(np.concatenate(([0], close.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # pairs [start, end)
    counts = np.concatenate(([0], np.cumsum(merged)))
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        if counts[hi] > counts[lo]:  # the run holds distinct scores: re-sort it with the exact key
            run = sorted(order[lo : hi + 1].tolist(), key=lambda i: (-round(float(values[i]), 9), -i))
            order[lo : hi + 1] = run
    return order


def _plain_order_nonnegative(scores: Any) -> Any:
    """Indices by descending score, ties newer (higher index) first, for float32 scores >= 0.

    The bits of a non-negative float32, read as an integer, order as its value does; with the
    index in the low 32 bits every key is distinct, so one plain sort of the keys gives the order
    (an unstable sort is exact on distinct keys) and the low bits are the indices.
    """
    keys = scores.view(np.uint32).astype(np.int64) << 32
    keys |= np.arange(len(scores), dtype=np.int64)
    keys.sort()
    return (keys[::-1] & 0xFFFFFFFF).astype(np.int64)


def greedy_fill(order: Any, costs: Any, fill: int) -> Any:
    """The indices that ``for i in order: if spent + costs[i] <= fill: take i`` takes, in order.

    In numpy, a run at a time: the groups that fit the room left are taken while their running
    sum fits; the first one that does not fit ends the run, and the next run looks only at the
    groups after it that fit what is left (a group too big earlier is too big later: the room only
    shrinks). Each run takes at least one group. Integer costs, so the sums are exact.
    """
    ordered = costs[order]
    taken: list[Any] = []
    remaining = int(fill)
    position = 0
    total = len(ordered)
    while position < total:
        candidates = np.flatnonzero(ordered[position:] <= remaining)
        if not len(candidates):
            break
        candidates += position
        sums = np.cumsum(ordered[candidates])
        fits = int(np.searchsorted(sums, remaining, side="right"))  # >= 1: the first candidate fits
        taken.append(candidates[:fits])
        if fits == len(candidates):
            break
        remaining -= int(sums[fits - 1])
        position = int(candidates[fits]) + 1
    if not taken:
        return order[:0]
    return order[np.concatenate(taken)]


class BM25Index:
    """An incremental BM25 index giving the same scores as ``bm25s.BM25()`` built from scratch.

    ``bm25s`` (Lucene variant, ``k1=1.5``, ``b=0.75``, float32 scores) has no way to add or drop a
    document, and rebuilding it for every request made ``retrieval`` quadratic. This index keeps
    postings per term, (slot, term frequency) pairs in an ``array`` (whose elements the garbage
    collector never visits), with their numpy form kept in buffers extended as the postings grow, so adding a
    turn group costs its own length and a query costs the postings of its terms in numpy. The
    arithmetic follows ``bm25s`` operation by operation (float64 term-frequency part, float32 idf
    and stored scores, float32 sums in query order), so the scores are identical
    (``tests/plugins/test_incremental_engines.py`` compares them). No query term is skipped:
    Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))`` is positive for every ``df <= N``.
    """

    K1 = 1.5
    B = 0.75

    def __init__(self) -> None:
        self._docs: dict[Any, tuple[tuple[str, ...], int, int]] = {}  # key -> (terms, length, slot)
        self._slot_lengths = array("q")  # per slot (ever given): its document's length
        # Per term: (slot, tf) of its documents in the order they arrived (its postings), and their
        # (slots, tf, B * lengths) as numpy arrays, extended as documents arrive, dropped on a removal.
        self._postings: dict[str, array[int]] = {}
        self._arrays: dict[str, tuple[int, Any, Any, Any]] = {}  # term -> (count, buffers)
        self._total_length = 0
        self._next_slot = 0
        self._slot_cache: tuple[list[Any] | None, Any] = (None, None)  # keys of the last query, their slots

    def __contains__(self, key: object) -> bool:
        return key in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    def keys(self) -> set[Any]:
        return set(self._docs)

    def add(self, key: Any, tokens: list[str]) -> None:
        """Index one document (an empty one counts as the single empty token, as in ``bm25s``)."""
        self.add_terms(key, term_counts(tokens))

    def add_terms(self, key: Any, document: TermCounts) -> None:
        """:meth:`add` of a document given by its :data:`TermCounts`."""
        if key in self._docs:
            return
        terms, counts = document
        length = sum(counts)
        if not length:
            terms, counts, length = ("",), array("q", (1,)), 1
        slot = self._next_slot
        self._docs[key] = (terms, length, slot)
        self._slot_lengths.append(length)
        self._next_slot += 1
        self._total_length += length
        # Append (slot, tf) to each of its terms' postings in C (a group holds hundreds of distinct
        # terms); the lengths are read when a query first needs a term's arrays.
        postings = map(self._postings.setdefault, terms, iter(partial(array, "q"), None))
        deque(map(array.extend, postings, zip(repeat(slot), counts)), maxlen=0)

    def remove(self, key: Any) -> None:
        found = self._docs.pop(key, None)
        if found is None:
            return
        terms, length, slot = found
        self._slot_cache = (None, None)  # a key added again gets a new slot
        self._total_length -= length
        for term in terms:
            self._arrays.pop(term, None)
            pairs = np.array(self._postings[term], dtype=np.int64).reshape(-1, 2)
            kept = pairs[pairs[:, 0] != slot]
            if len(kept):
                self._postings[term] = array("q", kept.ravel().tolist())
            else:
                del self._postings[term]

    def _term_arrays(self, term: str) -> tuple[Any, Any, Any]:
        """A term's postings as arrays: slots, term frequencies (float32) and ``B * length``
        (float64, the same product the score formula takes, so computing it once is exact)."""
        posting = self._postings[term]
        n = len(posting) // 2
        found = self._arrays.get(term)
        done = found[0] if found is not None and found[0] <= n else 0
        if found is None or done != n:
            # Documents only arrive at the end of a postings list (a removal drops the arrays):
            # the new tail is converted and written into buffers that grow by doubling, so a common
            # term costs its new postings, not a copy of all of them per query.
            pairs = np.array(posting[2 * done :], dtype=np.int64).reshape(-1, 2)
            fresh = pairs[:, 0]
            new_tf = pairs[:, 1].astype(np.float32)
            # A view of the lengths for one lookup (dropped at once: an exported array cannot grow).
            new_lengths = self.B * np.frombuffer(self._slot_lengths, dtype=np.int64)[fresh]
            buffers: tuple[Any, Any, Any]
            if found is None or not done or n > len(found[1]):
                capacity = n if found is None or not done else 2 * n
                buffers = (
                    np.empty(capacity, dtype=np.int64),
                    np.empty(capacity, dtype=np.float32),
                    np.empty(capacity, dtype=np.float64),
                )
                if found is not None and done:
                    for new, old in zip(buffers, found[1:], strict=True):
                        new[:done] = old[:done]
            else:
                buffers = (found[1], found[2], found[3])
            buffers[0][done:n] = fresh
            buffers[1][done:n] = new_tf
            buffers[2][done:n] = new_lengths
            found = (n, *buffers)
            self._arrays[term] = found
        return found[1][:n], found[2][:n], found[3][:n]

    def slot(self, key: Any) -> int:
        """The slot of an indexed document (kept until it is removed)."""
        return self._docs[key][2]

    def scores(self, keys: list[Any], terms: list[str]) -> list[float]:
        """BM25 scores of the documents ``keys`` (exactly the indexed set) for the query ``terms``."""
        if not keys:
            return []
        return self.slot_scores(self.slots(keys), terms).astype(np.float64).tolist()  # type: ignore[no-any-return]

    def slot_scores(self, slots: Any, terms: list[str]) -> Any:
        """:meth:`scores` of the documents in ``slots`` (an int64 array naming exactly the indexed
        set), as a float32 array."""
        n_docs = len(slots)
        by_slot = np.zeros(self._next_slot, dtype=np.float32)
        average = np.float64(self._total_length) / n_docs  # numpy's mean of the integer lengths
        idfs: list[Any] = []
        columns: list[tuple[Any, Any, Any]] = []
        for term in terms:
            posting = self._postings.get(term)
            if posting:
                df = len(posting) // 2
                idfs.append(np.float32(math.log(1 + (n_docs - df + 0.5) / (df + 0.5))))
                columns.append(self._term_arrays(term))
        if columns:
            # All terms at once, element by element the same operations as one term at a time
            # (float64 term part, float32 idf and contributions); ``add.at`` adds the contributions
            # in query order in float32, as the per-term ``+=`` did.
            # ``tf / (K1 * ((1 - B) + B * length / average) + tf) * idf``, in place on the fresh
            # concatenated array: the same IEEE operations (+ and * commute exactly), no temporaries.
            posted, tf, part = (np.concatenate(c) for c in zip(*columns, strict=True))
            idf = np.repeat(np.array(idfs, dtype=np.float32), [len(c[0]) for c in columns])
            np.divide(part, average, out=part)
            part += 1 - self.B
            part *= self.K1
            part += tf
            np.divide(tf, part, out=part)
            part *= idf
            np.add.at(by_slot, posted, part.astype(np.float32))
        return by_slot[slots]

    def slots(self, keys: list[Any]) -> Any:
        """The slots of ``keys`` as an array; a list of keys that extends the previous one (the
        groups of a growing request) costs its new keys only."""
        known, array = self._slot_cache
        docs = self._docs
        if known is not None and len(known) <= len(keys) and keys[: len(known)] == known:
            fresh = keys[len(known) :]
            if fresh:
                array = np.concatenate([array, np.fromiter((docs[k][2] for k in fresh), np.int64, len(fresh))])
        else:
            array = np.fromiter((docs[k][2] for k in keys), dtype=np.int64, count=len(keys))
        self._slot_cache = (list(keys), array)
        return array


def rank_indexed(index: BM25Index, keys: list[Any], terms: list[str]) -> list[int]:
    """:func:`rank_groups` over documents already in ``index`` (same order, same ties)."""
    if not keys:
        return []
    return rank_slots(index, index.slots(keys), terms).tolist()  # type: ignore[no-any-return]


def rank_slots(index: BM25Index, slots: Any, terms: list[str]) -> Any:
    """:func:`rank_indexed` of the documents in ``slots`` (exactly the indexed set), as an array."""
    if not len(slots):
        return np.zeros(0, dtype=np.int64)
    if not terms:
        return np.arange(len(slots) - 1, -1, -1)  # all scores zero: newest first
    scores = index.slot_scores(slots, terms)
    return order_by_score(scores.astype(np.float64), single=scores)
