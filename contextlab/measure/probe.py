"""The measurement observer: retention (closed-book, recoverable, re-fetch), specific losses,
compaction diffs, summary faithfulness and prefix-break segments, request by request.

Cost model (issue 17 item 4, ``docs/metrics.md`` §Cost): per request the probe touches only the
messages after the shared prefix (each scanned once by one Aho-Corasick automaton over every target
text, and reused by identity when an engine only reorders), the targets that became eligible, and
the targets whose presence changed. Group counts are kept as running sums, so no per-request work
is proportional to the number of facts. Whole-history work (the compaction diff, faithfulness,
re-checking recoverability) happens only on the requests right after a commit.
"""

from __future__ import annotations

import functools
import math
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, count, filterfalse, repeat
from operator import add, is_, itemgetter, not_
from typing import Any

import numpy as np
import pandas as pd

from contextlab import hermes_texts, schema
from contextlab.engine import Message
from contextlab.host.observers import RequestView
from contextlab.measure.faithfulness import FaithfulnessMemo, check_summaries
from contextlab.measure.recovery import DEFAULT_K, Reach, RecoveryOracle
from contextlab.measure.scan import RowScans, TextIndex
from contextlab.measure.targets import KINDS, TargetSet, fact_targets_for, scans_for, targets_for
from contextlab.measure.template import template_texts
from contextlab.measure.text import message_payload
from contextlab.messages import content_text, row_call_ids, strip_surrogates, wire_message
from contextlab.transcripts.model import Transcript

SUMMARY_KEY = hermes_texts.SUMMARY_KEY
FACT_COLUMNS = schema.names(schema.PROBE_TRACE)
"""The original retention columns (unchanged names and meaning; declared in :mod:`contextlab.schema`)."""
MEMO_ROWS = 50_000
"""Row objects whose targets a replay's probe remembers (while the history is unchanged); then it starts over."""
_VECTOR_MIN = 256
"""Target incidences from which a request's count changes are summed in numpy."""
_VECTOR_FLIPS = 64
"""Targets changing presence at one request from which their group counts move in numpy."""
_MAX_GROUPS = 3
"""Groups a target belongs to at most: its kind's ``all``, a category and an origin."""
_DENSE_PER_INCIDENCE = 4
"""Session targets per moved incidence up to which those sums run over every target (else over the
distinct targets moved, found by a sort)."""

MEASURE_COLUMNS = schema.names(schema.MEASURE_TRACE)
"""Columns the measurement layer adds after the original ones (``docs/metrics.md`` §Columns)."""

_KIND_COLUMN = {
    "identifier": "identifier_retention",
    "error": "error_retention",
    "artifact": "artifact_retention",
    "instruction": "instruction_retention",
}


@dataclass(frozen=True)
class Group:
    """A slice of targets: ``kind`` plus a ``dimension`` (``all``, ``category``, ``origin``) value."""

    kind: str
    dimension: str
    value: str


class MeasureProbe:
    """A :class:`~contextlab.host.observers.RequestObserver` for every measurement in ``docs/metrics.md``.

    Args:
        k: Oracle calls allowed for recoverable retention (one search + ``k - 1`` expansions).
        recover: Run the recovery oracle when the engine exposes a search tool.
        max_attempts: The host's per-turn compaction cap (for the attempt-cap diagnostic).
        cache_price: ``(input, cache_read, write)`` USD per 1M tokens of the run's first cache
            profile, to price prefix breaks (None: unpriced).
        facts_only: Only the three original ``facts_*`` columns (the old ``RetentionProbe``).
    """

    def __init__(
        self,
        *,
        k: int = DEFAULT_K,
        recover: bool = True,
        max_attempts: int = 3,
        cache_price: tuple[float, float, float] | None = None,
        facts_only: bool = False,
    ) -> None:
        self.k = k
        self.recover = recover
        self.max_attempts = max_attempts
        self.cache_price = cache_price
        self.facts_only = facts_only
        self._engine: Any = None
        self._bound = False
        self._set = TargetSet((), "none")

    def clone(self) -> MeasureProbe:
        return MeasureProbe(
            k=self.k,
            recover=self.recover,
            max_attempts=self.max_attempts,
            cache_price=self.cache_price,
            facts_only=self.facts_only,
        )

    def columns(self) -> list[str]:
        return list(FACT_COLUMNS) if self.facts_only else [*FACT_COLUMNS, *MEASURE_COLUMNS]

    # ------------------------------------------------------------------ setup

    def bind(self, transcript: Transcript) -> None:
        """Read the transcript's targets (called by the host before the first request)."""
        self._transcript = transcript
        # A facts-only probe on gold facts needs no extraction of the other kinds.
        found = fact_targets_for(transcript) if self.facts_only else targets_for(transcript)
        targets = list(found.targets)
        self._set = found
        self._targets = targets
        self._facts = [i for i, t in enumerate(targets) if t.kind == "fact"]
        self._has_facts = bool(self._facts)
        groups: dict[tuple[str, str, str], int] = {}
        self._groups_of: list[tuple[int, ...]] = []
        for target in targets:
            kind = target.kind
            keys = [(kind, "all", "all")]
            if kind in ("fact", "artifact", "instruction"):
                keys.append((kind, "category", target.category))
            if kind in ("fact", "identifier"):
                keys.append((kind, "origin", target.origin))
            self._groups_of.append(tuple(groups.setdefault(k, len(groups)) for k in keys))
        self._groups = [Group(*key) for key in groups]
        # Each target's groups as a row, padded with a spare group (len(groups)) that nothing reads.
        sizes = np.fromiter(map(len, self._groups_of), dtype=np.int64, count=len(targets))
        members = np.fromiter(chain.from_iterable(self._groups_of), dtype=np.int64, count=int(sizes.sum()))
        starts = np.repeat(np.cumsum(sizes) - sizes, sizes)
        self._group_matrix = np.full((len(targets), _MAX_GROUPS), len(groups), dtype=np.int64)
        self._group_matrix[np.repeat(np.arange(len(targets)), sizes), np.arange(len(members)) - starts] = members
        self._all = {g.kind: i for i, g in enumerate(self._groups) if g.dimension == "all"}
        self._loss_groups = [(kind, column, self._all.get(kind)) for kind, column in _KIND_COLUMN.items()]
        # Per group: targets eligible, in context and recoverable now (machine integers: a request's
        # snapshot of them is three block copies).
        self._eligible_n = array("q", bytes(8 * len(groups)))
        self._present_n = array("q", bytes(8 * len(groups)))
        self._recoverable_n = array("q", bytes(8 * len(groups)))
        if self.facts_only:
            # Only the facts: a small index of their own (the shared scans are by full target list).
            texts = [t.texts for t in targets]
            self._scans = RowScans(TextIndex(list(dict.fromkeys(x for ts in texts for x in ts))), texts, [])
        else:
            self._scans = scans_for(transcript)
        self._order = sorted(range(len(targets)), key=lambda i: (targets[i].message_index, i))
        self._kind_codes = np.array([KINDS.index(t.kind) for t in targets], dtype=np.int64)
        # Where each target is introduced: a compaction diff counts only the targets the request
        # before it could hold (a later ask repeating an earlier one's words is not in it yet).
        self._introduced = np.fromiter((t.message_index for t in targets), dtype=np.int64, count=len(targets))
        self._next = 0
        # Targets a host spill took out of the row that introduces them: never in the conversation
        # the engine was given, so never eligible (docs/metrics.md, Targets).
        self._host_spilled: set[int] = set()
        self._made: dict[int, Message] = {}  # transcript index -> the row the host made instead
        self._eligible = bytearray(len(targets))
        self._counts = [0] * len(targets)
        self._reach: dict[int, Reach] = {}
        # Re-fetch: (transcript index of the use, fact) in order of use.
        self._needs = sorted((u, i) for i in self._facts for u in targets[i].uses if u > targets[i].message_index)
        self._next_need = 0
        self._refetch_calls: set[str] = set()
        self._refetch_tokens = 0
        self._refetch_needs = 0
        self._refetch_missing = 0
        self._active: int | None = None
        self._bound = True
        # Per-request state.
        self._previous: Sequence[Message] = []
        self._previous_found: list[frozenset[int]] = []
        self._row_found: dict[int, tuple[Message, frozenset[int]]] = {}  # row object id -> (row, targets)
        # Ids of row objects seen more than once in one request (an engine's shared marker rows): only
        # these are counted when a request repeats objects (a stale id costs a count, never a wrong one).
        self._repeated: set[int] = set()
        self._previous_tokens: Sequence[int] = []
        self._previous_tools: list[dict[str, Any]] | None = None
        self._previous_prompt = 0
        self._previous_history: Sequence[Message] = []
        self._previous_version = 0
        self._previous_index = 0
        self._engine_texts: set[str] = set()
        # Per request: its number, and the eligible, present and recoverable counts of every group,
        # laid end to end in machine integers (the frame reads them as arrays without a conversion).
        self._snapshot_requests = array("q")
        self._snapshot_counts = (array("q"), array("q"), array("q"))
        self._retentions: list[float] = []
        self._kind_sums: dict[str, list[float]] = {}
        self._task_checks = [0, 0]
        self._task_lost_after_commit = 0
        self._diff_rows: list[dict[str, Any]] = []
        # Per commit: (request, targets that left or were summarised, which of them were removed,
        # transcript index); laid end to end only when the frame is built.
        self._items: list[tuple[int, np.ndarray, np.ndarray, int]] = []
        self._faith = {"summaries_checked": 0, "summary_identifiers": 0, "summary_unsupported_identifiers": 0}
        self._faith.update({"summary_status_upgrades": 0, "summary_status_undetermined": 0})
        self._faith_rows: list[dict[str, Any]] = []
        self._faith_memo = FaithfulnessMemo()
        self._history_payloads: dict[int, tuple[Any, Any, bool, str]] = {}
        self._rendered: dict[int, tuple[Any, Any, bool, str]] | None = None
        self._template: tuple[str, ...] | None = None  # built at the first summary checked
        self._occurrences: dict[int, tuple[int, ...]] | None = None
        self._oracle: RecoveryOracle | None = None
        if self._engine is not None and self.recover and self._has_facts:
            oracle = RecoveryOracle(self._engine, self.k)
            self._oracle = oracle if oracle.available else None

    def rows_made(self, rows: Mapping[int, Message]) -> None:
        """The host appended these transcript rows with other content (a spilled or wrapped tool
        output, a reply it flattened, stripped or redacted): the targets a row introduces that its
        made form lacks are set aside."""
        if not self._bound:
            return
        self._made.update(rows)
        targets, payloads, transcript = self._targets, self._scans.payloads, self._transcript.messages
        for index, row in rows.items():
            # The row as recorded, in its sent form (rendered with the targets, except for a
            # facts-only probe, which renders none).
            given = payloads[index] if index < len(payloads) else message_payload(wire_message(transcript[index]))
            lost = self._scan_text(given) - self._scan_text(message_payload(row))
            self._host_spilled.update(t for t in lost if targets[t].message_index == index)

    def bind_engine(self, engine: Any) -> None:
        """The run's engine, for the recovery oracle (called by the host before :meth:`bind`)."""
        self._engine = engine

    # ------------------------------------------------------------------ per request

    def _scan_text(self, payload: str) -> frozenset[int]:
        """Every target with a text in ``payload`` (one Aho-Corasick pass per distinct payload,
        shared by the replays of the transcript; overlaps included)."""
        return self._scans.find(payload)

    def observe(self, view: RequestView) -> dict[str, Any]:
        if not self._bound:
            return {}
        messages = view.messages
        ti = view.transcript_index if view.transcript_index >= 0 else len(self._transcript.messages)
        previous_found = self._previous_found
        keep = min(view.prefix_messages, len(previous_found))
        touched: dict[int, bool] = {}  # target -> was present before this request
        counts = self._counts
        # Rows after the shared prefix that were already in the previous request (the same objects:
        # an engine's selection moves or keeps rows, a mask changes a few) keep their targets and
        # change no count; only the rows that left are subtracted and the new ones added.
        suffix = messages[keep:]
        # A rewrite between two requests (a commit) is known by the host's history version, not by
        # the rows it left: a summary after the first row, or a prune, keeps the first row.
        committed = bool(self._previous_history) and view.history_version != self._previous_version
        # The row list is edited in place (a copy per request is quadratic over a long session),
        # except after a commit, whose diff needs the previous request's rows.
        found_list = previous_found[:keep] if committed else previous_found
        if committed:
            self._row_found.clear()  # rows of the replaced history are not coming back
        suffix_found, flipped = self._suffix_found(suffix, keep, touched, committed)
        del found_list[keep:]
        found_list += suffix_found

        # The touched targets whose presence changed move their groups' counts.
        recheck = self._flip_many(flipped) if len(flipped) >= _VECTOR_FLIPS else self._flip_each(flipped)
        order, targets = self._order, self._targets
        while self._next < len(order) and targets[order[self._next]].message_index < ti:
            t = order[self._next]
            self._next += 1
            if t in self._host_spilled:
                continue
            self._eligible[t] = 1
            present = counts[t] > 0
            for g in self._groups_of[t]:
                self._eligible_n[g] += 1
                if present:
                    self._present_n[g] += 1
            if targets[t].kind == "task":
                self._active = t
            elif not present:
                recheck.append(t)

        row: dict[str, Any] = {}
        if committed and not self.facts_only:
            self._on_commit(view, touched)
            if self._oracle is not None:
                # The engine's store changed: missing facts not known to be reachable are looked up
                # again (a reachable fact stays reachable: recall stores only grow; docs/metrics.md).
                recheck += [
                    t
                    for t in self._facts
                    if self._eligible[t] and counts[t] == 0 and (t not in self._reach or self._reach[t].calls is None)
                ]
                recheck = list(dict.fromkeys(recheck))
        if self._oracle is not None:
            # Facts with the same text get the same answer at one request (the engine is not changed
            # in between): the oracle asks its tools once per text.
            answers: dict[str, Reach] = {}
            for t in recheck:
                if targets[t].kind == "fact":
                    text = targets[t].texts[0]
                    reach = answers.get(text)
                    if reach is None:
                        reach = answers[text] = self._oracle.reach(text)
                    self._set_reach(t, reach)
        # Each part writes its columns into the row (no dict per part and request).
        self._fact_columns(row)
        if not self.facts_only:
            self._refetch(ti, row)
            self._loss_columns(committed, row)
            self._break_columns(view, row)
            self._record_groups(view.request)
        self._previous = messages
        self._previous_found = found_list
        self._previous_tokens = view.message_tokens
        self._previous_tools = view.tools
        self._previous_prompt = view.prompt_tokens
        self._previous_history = view.history
        self._previous_version = view.history_version
        self._previous_index = ti
        return row

    def _flip_each(self, flipped: list[int]) -> list[int]:
        """For each eligible target of ``flipped`` (its presence changed), move its groups' present
        counts and forget its recovery if it is present now; returns those now absent, to recheck."""
        counts, recheck = self._counts, []
        for t in flipped:
            if not self._eligible[t]:
                continue
            now = counts[t] > 0
            delta = 1 if now else -1
            for g in self._groups_of[t]:
                self._present_n[g] += delta
            if not now:
                recheck.append(t)
            elif t in self._reach:
                self._forget_reach(t)
        return recheck

    def _flip_many(self, flipped: list[int]) -> list[int]:
        """:meth:`_flip_each` for many targets, in numpy: the group counts move by their sums per
        group (no Python step per target)."""
        changed = np.array(flipped, dtype=np.int64)
        changed = changed[np.frombuffer(self._eligible, dtype=np.uint8)[changed] != 0]
        if not len(changed):
            return []
        counts = self._counts
        now = np.fromiter(map(counts.__getitem__, changed.tolist()), dtype=np.int64, count=len(changed)) > 0
        groups = self._group_matrix[changed]  # a target's groups, padded with the spare group
        deltas = np.broadcast_to(np.where(now, 1, -1)[:, None], groups.shape)
        net = np.bincount(groups.ravel(), weights=deltas.ravel(), minlength=len(self._groups) + 1)
        present_n = self._present_n
        for g in np.flatnonzero(net[:-1]).tolist():
            present_n[g] += int(net[g])
        if self._reach:
            for t in changed[now].tolist():
                if t in self._reach:
                    self._forget_reach(t)
        return changed[~now].tolist()  # type: ignore[no-any-return]

    def _suffix_found(
        self, suffix: Sequence[Message], keep: int, touched: dict[int, bool], record: bool
    ) -> tuple[list[frozenset[int]], list[int]]:
        """The targets of each row of ``suffix`` (the request after its shared prefix), with the counts
        moved from the previous request's rows after ``keep`` to these; and the targets whose
        presence changed (see :meth:`_move_counts`; ``record``: a commit's diff reads ``touched``).

        A row's targets are a function of the row object, so the rows are compared as multisets of
        objects: an object that occurs as often as before (anywhere: a selection moves rows) changes
        no count and costs no Python step; the counts change only by the occurrences that left or
        came, found by C-level set passes over the ids (``Counter``s when an object repeats).
        """
        ids = list(map(id, suffix))
        if keep >= len(self._previous):
            # Nothing left (an appended turn, the common case): every row of the suffix came.
            came = self._fresh_found(ids, suffix) if ids else []
            return came, self._move_counts([], came, touched, record) if came else []
        previous_rows = self._previous[keep:]
        before_ids = list(map(id, previous_rows))
        by_id = dict(zip(before_ids, self._previous_found[keep:], strict=False))
        now = set(ids)
        distinct_before = len(by_id)
        # The rows that left and came, with their multiplicities, in request order: an object that
        # is in only one of the two requests is kept (or skipped) by one C-level pass over the ids.
        gone = list(filterfalse(now.__contains__, before_ids))
        is_fresh = list(map(not_, map(by_id.__contains__, ids)))
        fresh = list(compress(ids, is_fresh))
        left = list(map(by_id.__getitem__, gone))
        came = self._fresh_found(fresh, list(compress(suffix, is_fresh))) if fresh else []
        by_id.update(zip(fresh, came, strict=True))
        if len(now) != len(ids) or distinct_before != len(before_ids):
            # Some object occurs more than once (an engine returned one marker dict twice): an object in
            # both requests moves counts by the change in its multiplicity.
            self._repeats_moved((ids, len(now)), (before_ids, distinct_before), by_id, left, came)
        flipped = self._move_counts(left, came, touched, record) if left or came else []
        return list(map(by_id.__getitem__, ids)), flipped

    def _repeats_moved(
        self,
        now: tuple[list[int], int],
        before: tuple[list[int], int],
        by_id: dict[int, frozenset[int]],
        left: list[frozenset[int]],
        came: list[frozenset[int]],
    ) -> None:
        """Add to ``left`` and ``came`` the occurrences by which an object in both requests
        changed its multiplicity (in order of first occurrence; objects in one request only are
        already counted with their multiplicities). ``now`` and ``before``: each request's object
        ids and how many distinct ones it holds.

        Only the objects known to repeat are counted (an engine repeats the same few marker rows
        request after request, among a hundred rows that occur once): when the others do not all
        occur once in a request, the objects it repeats are learnt first."""
        repeated = self._repeated
        counts = []
        for ids, distinct in (now, before):
            tally = Counter(filter(repeated.__contains__, ids))
            if len(ids) - tally.total() != distinct - len(tally):  # some other object occurs twice
                if len(repeated) >= MEMO_ROWS:
                    repeated.clear()
                repeated.update(i for i, n in Counter(ids).items() if n > 1)
                tally = Counter(filter(repeated.__contains__, ids))
            counts.append(tally)
        after, earlier = counts
        for i in filter(earlier.__contains__, after):
            delta = after[i] - earlier[i]
            if delta:
                (came if delta > 0 else left).extend([by_id[i]] * abs(delta))

    def _fresh_found(self, fresh: list[int], rows: Sequence[Message]) -> list[frozenset[int]]:
        """The targets of ``rows`` (not in the previous request), whose ids are ``fresh``:
        remembered ones by one C-level lookup (an entry keeps its row alive, so its id is that
        row's), the others looked up by payload."""
        known = list(map(self._row_found.get, fresh))
        if None in known:
            for k in compress(count(), map(is_, known, repeat(None))):
                row = rows[k]
                known[k] = (row, self._found_of(row))
        return list(map(itemgetter(1), known))  # type: ignore[arg-type]

    def _found_of(self, message: Message) -> frozenset[int]:
        """The targets of a row new to this request: remembered per row object while the history is
        unchanged (a selection brings back rows it dropped a few requests ago), else looked up by
        payload."""
        known = self._row_found.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        found = self._scan_text(message_payload(message))
        if len(self._row_found) >= MEMO_ROWS:
            self._row_found.clear()
        self._row_found[id(message)] = (message, found)  # the row is kept, so its id is not reused
        return found

    def _move_counts(
        self, left: list[frozenset[int]], came: list[frozenset[int]], touched: dict[int, bool], record: bool
    ) -> list[int]:
        """Subtract the targets of the rows that ``left`` and add those of the rows that ``came``,
        recording in ``touched`` whether each target was present before (when ``record``: only a
        commit's diff reads it after this call; a selecting engine swaps hundreds of targets at a
        request that commits nothing). Returns the targets whose presence changed (what ``observe``
        needs of either does not depend on their order)."""
        counts = self._counts
        if came and not left and not touched:
            # Rows came and none left (an appended turn, most requests): each count goes up by the
            # number of new rows holding the target, read and written back at C level.
            added: Iterable[int] | None = None  # None: one each
            if len(came) == 1:
                arrived = list(came[0])
            elif len(came) == 2:  # a call and its result
                first, second = came
                both = first & second
                arrived = [*first, *filterfalse(both.__contains__, second)] if both else [*first, *second]
                if both:
                    added = map((1).__add__, map(both.__contains__, arrived))
            else:
                tally = Counter(chain.from_iterable(came))  # in order of first occurrence
                arrived, added = list(tally), tally.values()
            before = list(map(counts.__getitem__, arrived))
            if record:
                touched.update(zip(arrived, map(bool, before), strict=True))
            after = map((1).__add__, before) if added is None else map(add, before, added)
            deque(map(counts.__setitem__, arrived, after), maxlen=0)  # run for its effect
            return list(compress(arrived, map(not_, before)))  # absent before, present now
        n_left = sum(map(len, left))
        n_came = sum(map(len, came))
        if n_left + n_came < _VECTOR_MIN:
            for found in left:
                for t in found:
                    touched.setdefault(t, counts[t] > 0)
                    counts[t] -= 1
            for found in came:
                for t in found:
                    touched.setdefault(t, counts[t] > 0)
                    counts[t] += 1
            return [t for t, was in touched.items() if (counts[t] > 0) != was]
        # Many incidences (a selection that swaps whole groups): the net change of each target in
        # numpy, and the counts read and written back at C level (no Python step per target).
        gone_ids = np.fromiter(chain.from_iterable(left), dtype=np.int64, count=n_left)
        came_ids = np.fromiter(chain.from_iterable(came), dtype=np.int64, count=n_came)
        if len(counts) <= _DENSE_PER_INCIDENCE * (n_left + n_came):
            # Few targets in the session for this many incidences: count over all of them.
            came_n = np.bincount(came_ids, minlength=len(counts))
            gone_n = np.bincount(gone_ids, minlength=len(counts))
            targets = np.flatnonzero(came_n + gone_n)
            net = came_n[targets] - gone_n[targets]
        else:
            # Over the targets these rows hold, not all of the session's (a long session has tens
            # of thousands of targets; a request moves a few hundred).
            targets = np.unique(np.concatenate((gone_ids, came_ids)))
            net = np.bincount(np.searchsorted(targets, came_ids), minlength=len(targets)) - np.bincount(
                np.searchsorted(targets, gone_ids), minlength=len(targets)
            )
        order = targets.tolist()
        current = np.fromiter(map(counts.__getitem__, order), dtype=np.int64, count=len(order))
        updated = current + net
        was = current > 0
        if record:
            touched.update(zip(order, was.tolist(), strict=True))  # empty until now: one call per request
        deque(map(counts.__setitem__, order, updated.tolist()), maxlen=0)  # the map is run for its effect
        return targets[was != (updated > 0)].tolist()  # type: ignore[no-any-return]

    def _uses(self, t: int) -> tuple[int, ...]:
        target = self._targets[t]
        if self._set.uses_ready or target.kind == "fact":
            return target.uses
        if self._occurrences is None:
            self._occurrences = self._scans.occurrences([other.message_index for other in self._targets])
        return self._occurrences.get(t, ())

    def _item_columns(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Summarised and removed targets of each commit, with what later requests needed them:
        the ``compaction_items`` columns in item order, and the order that ranks them (request,
        needed later first, most later uses first, kind, key). Built column-wise: a long compacting
        run has tens of thousands of items."""
        sizes = [len(chosen) for _request, chosen, _removed, _ti in self._items]
        requests = np.repeat(np.array([item[0] for item in self._items], dtype=np.int64), sizes)
        indices = np.repeat(np.array([item[3] for item in self._items], dtype=np.int64), sizes)
        owners: list[int] = np.concatenate([item[1] for item in self._items]).tolist()
        removed = np.concatenate([item[2] for item in self._items])
        # One entry per distinct target: labels, and its uses laid end to end, so that every item's
        # first later use is one vectorised search over (target slot, transcript index) keys.
        slot: dict[int, int] = {t: i for i, t in enumerate(dict.fromkeys(owners))}
        targets = [self._targets[t] for t in slot]
        uses = [self._uses(t) for t in slot]
        starts = np.zeros(len(uses) + 1, dtype=np.int64)
        np.cumsum([len(u) for u in uses], out=starts[1:])
        flat = np.fromiter(chain.from_iterable(uses), dtype=np.int64, count=int(starts[-1]))
        at = indices
        low = min(int(at.min()), int(flat.min()) if len(flat) else 0)
        span = 1 + max(int(at.max()), int(flat.max()) if len(flat) else 0) - low
        keys = np.repeat(np.arange(len(uses), dtype=np.int64), np.diff(starts)) * span + (flat - low)
        item_slot = np.fromiter(map(slot.__getitem__, owners), dtype=np.int64, count=len(owners))
        first = np.searchsorted(keys, item_slot * span + (at - low))
        later = starts[item_slot + 1] - first
        has_later = later > 0
        following = flat[np.minimum(first, len(flat) - 1)] if len(flat) else np.zeros(len(owners), dtype=np.int64)
        # The dtype a list of these values gets: int64 when all are set, float64 (NaN) when some.
        if has_later.all():
            next_use: np.ndarray = following
        elif has_later.any():
            next_use = np.where(has_later, following, np.nan)
        else:
            next_use = np.full(len(owners), None, dtype=object)

        def label(values: list[str]) -> Any:
            return _strings(values, item_slot)

        def rank(values: list[str]) -> np.ndarray:  # equal strings rank equal (ties go to the next key)
            position = {value: i for i, value in enumerate(sorted(set(values)))}
            return np.fromiter(map(position.__getitem__, values), dtype=np.int64, count=len(values))[item_slot]

        kinds, names = [x.kind for x in targets], [x.key for x in targets]
        columns = {
            "request": requests,
            "kind": label(kinds),
            "key": label(names),
            "text": label([x.texts[0][:160] for x in targets]),
            "category": label([x.category for x in targets]),
            "origin": label([x.origin for x in targets]),
            "outcome": _strings(["summarised", "removed"], removed.astype(np.int64)),
            "needed_later": has_later,
            "later_uses": later,
            "next_use": next_use,
        }
        # lexsort is stable and takes its last key first: what sort_values(kind="stable") does.
        order = np.lexsort((rank(names), rank(kinds), -later, ~has_later, columns["request"]))
        return columns, order

    def _item_frame(self, labels: Mapping[str, Any]) -> pd.DataFrame:
        """The ``compaction_items`` frame, ranked."""
        if not self._items:
            return _labelled(ITEM_COLUMNS, None, labels)
        columns, order = self._item_columns()
        return _labelled(ITEM_COLUMNS, {name: values[order] for name, values in columns.items()}, labels)

    def _set_reach(self, t: int, reach: Reach) -> None:
        self._forget_reach(t)
        self._reach[t] = reach
        if reach.calls is not None:
            for g in self._groups_of[t]:
                self._recoverable_n[g] += 1

    def _forget_reach(self, t: int) -> None:
        old = self._reach.pop(t, None)
        if old is not None and old.calls is not None:
            for g in self._groups_of[t]:
                self._recoverable_n[g] -= 1

    def _fact_columns(self, out: dict[str, Any]) -> None:
        g = self._all.get("fact")
        if not self._has_facts or g is None:
            if self.facts_only:
                out.update(facts_eligible=0, facts_in_context=0, fact_retention=math.nan)
            return
        eligible, present = self._eligible_n[g], self._present_n[g]
        retention = present / eligible if eligible else math.nan
        if eligible:
            self._retentions.append(retention)
        out["facts_eligible"] = eligible
        out["facts_in_context"] = present
        out["fact_retention"] = retention
        if not self.facts_only:
            recoverable = self._recoverable_n[g]
            out["facts_recoverable"] = recoverable
            out["fact_retention_recoverable"] = (present + recoverable) / eligible if eligible else math.nan

    def _refetch(self, ti: int, out: dict[str, Any]) -> None:
        missing = 0
        calls: set[str] = set()
        needs = self._needs
        while self._next_need < len(needs) and needs[self._next_need][0] <= ti:
            _use, t = needs[self._next_need]
            self._next_need += 1
            self._refetch_needs += 1
            if self._counts[t] > 0:
                continue
            missing += 1
            call = self._targets[t].source_call
            if call:
                calls.add(call)
                if call not in self._refetch_calls:
                    self._refetch_calls.add(call)
                    self._refetch_tokens += self._tool_tokens(t)
        self._refetch_missing += missing
        if self._has_facts:
            out["refetch_missing"] = missing
            out["refetch_calls"] = len(calls)

    def _tool_tokens(self, t: int) -> int:
        from contextlab.tokens import estimate_tokens_rough

        return estimate_tokens_rough(content_text(self._transcript.messages[self._targets[t].message_index]))

    def _loss_columns(self, committed: bool, out: dict[str, Any]) -> None:
        eligible_n, present_n, kind_sums = self._eligible_n, self._present_n, self._kind_sums
        for kind, column, g in self._loss_groups:
            eligible = eligible_n[g] if g is not None else 0
            if g is None or not eligible:
                out[column] = math.nan
                continue
            out[column] = value = present_n[g] / eligible
            sums = kind_sums.get(kind)
            if sums is None:
                sums = kind_sums[kind] = [0.0, 0.0]
            sums[0] += value
            sums[1] += 1
        active = self._active
        if active is None:
            out["active_task_in_context"] = None
        else:
            present = self._counts[active] > 0
            out["active_task_in_context"] = present
            self._task_checks[0] += int(present)
            self._task_checks[1] += 1
            if committed and not present:
                self._task_lost_after_commit += 1

    def _break_columns(self, view: RequestView, out: dict[str, Any]) -> None:
        previous = self._previous
        if not previous:
            out.update(break_segment=None, break_position=None, break_tokens=0)
            return
        tools = view.tools
        old_tools = self._previous_tools
        if old_tools is not tools and old_tools != tools:
            out.update(break_segment="tools", break_position=0)
            out["break_tokens"] = max(0, self._previous_prompt - view.fixed_overhead_tokens)
            return
        p = view.prefix_messages
        if p >= len(previous):
            out.update(break_segment=None, break_position=None, break_tokens=0)
            return
        old = previous[p]
        role = old.get("role")
        if role == "system":
            segment = "system"
        elif content_text(old) in self._engine_texts:
            segment = "summary"
        else:
            segment = {"tool": "tool_result"}.get(str(role), str(role))
        out.update(break_segment=segment, break_position=p, break_tokens=sum(self._previous_tokens[p:]))

    def _record_groups(self, request: int) -> None:
        # Three block copies of the counts per request, into flat buffers (no object per request);
        # the long-form frame is built once, vectorised (frames()).
        self._snapshot_requests.append(request)
        eligible, present, recoverable = self._snapshot_counts
        eligible.extend(self._eligible_n)
        present.extend(self._present_n)
        recoverable.extend(self._recoverable_n)

    def _probe_frame(self, labels: Mapping[str, Any]) -> pd.DataFrame:
        """One row per request and group with eligible targets, request-major, groups in order."""
        columns = ["request", "kind", "dimension", "group", "eligible", "in_context", "recoverable"]
        if not self._snapshot_requests or not self._groups:
            return _labelled(columns, None, labels)
        width = len(self._groups)
        eligible, present, recoverable = (
            np.frombuffer(counts, dtype=np.int64).reshape(-1, width) for counts in self._snapshot_counts
        )
        mask = eligible > 0
        if not mask.any():
            return _labelled(columns, None, labels)
        rows, cols = np.nonzero(mask)  # row-major: request by request, groups in order
        requests = np.frombuffer(self._snapshot_requests, dtype=np.int64)
        names = {
            name: _strings([getattr(g, attr) for g in self._groups], cols)
            for name, attr in (("kind", "kind"), ("dimension", "dimension"), ("group", "value"))
        }
        data = {"request": requests[rows], **names, "eligible": eligible[mask], "in_context": present[mask]}
        return _labelled(columns, {**data, "recoverable": recoverable[mask]}, labels)

    # ------------------------------------------------------------------ commits

    def _on_commit(self, view: RequestView, touched: dict[int, bool]) -> None:
        """The history was replaced since the previous request: diff it and check new summaries."""
        before, after = self._previous_history, view.history
        transcript = self._transcript.messages
        appended = transcript[self._previous_index : max(self._previous_index, view.transcript_index)]
        made = self._made
        appended_texts = {content_text(made.get(i, m)) for i, m in enumerate(appended, start=self._previous_index)}
        # Rows are matched by uid one to one, in order: a uid may repeat (the compressor restating the
        # in-flight ask under its uid, the host restoring the newest ask), and a second row under one
        # uid is a row the commit wrote, not a second keeping of the first.
        earlier: dict[Any, deque[Message]] = {}
        for message in before:
            earlier.setdefault(message.get("message_uid"), deque()).append(message)
        written: list[Message] = []
        merged: list[str] = []  # summaries merged into a row the history had (it keeps its uid)
        kept = rewritten = 0
        for message in after:
            same_uid = earlier.get(message.get("message_uid"))
            if same_uid:
                old = same_uid.popleft()
                if content_text(old) == content_text(message) and old.get("tool_calls") == message.get("tool_calls"):
                    kept += 1
                else:
                    rewritten += 1
                    summary = merged_summary(old, message)
                    if summary is not None:
                        merged.append(summary)
            elif content_text(message) not in appended_texts:
                written.append(message)
        removed = sum(map(len, earlier.values()))
        # The rows are summarised when the commit wrote any row; what the written rows claim (those
        # not repeating a row of the history word for word) names summarised targets and is checked.
        summarised = bool(written or merged)
        claims = self._claims(written, before) + merged
        self._engine_texts.update(claims)
        request = view.request
        counts = self._counts
        # Targets that were in the previous request: kept, summarised (only in new rows) or removed.
        in_summary = self._summary_targets(claims)
        # Eligible at the previous request (introduced before it), as the per-request columns count.
        held = set().union(*self._previous_found)
        present = np.fromiter(held, dtype=np.int64, count=len(held))
        present = present[self._introduced[present] < self._previous_index]
        before_present = set(present.tolist())
        # A target of the previous request that this request did not touch still has its count (> 0)
        # and is kept, unless a new summary row names it: only the touched ones that were present
        # and those named in the summaries are classified one by one; the rest are counted by kind.
        candidates = sorted(before_present.intersection([t for t, was in touched.items() if was] + list(in_summary)))
        kept_n = np.bincount(self._kind_codes[present], minlength=len(KINDS)).tolist()
        # Each candidate leaves (removed: no row holds it now; summarised: only the new summary
        # rows do) or is kept; the leaving ones become items, and all are tallied by kind.
        n = len(candidates)
        found = np.fromiter(map(counts.__getitem__, candidates), dtype=np.int64, count=n)
        named = np.fromiter(map(in_summary.__contains__, candidates), dtype=bool, count=n)
        leaves = (found <= 0) | (named & (found <= 1))
        chosen = np.fromiter(candidates, dtype=np.int64, count=n)[leaves]
        lost = found[leaves] <= 0
        kinds = self._kind_codes[chosen]
        summarised_n = np.bincount(kinds[~lost], minlength=len(KINDS))
        removed_n = np.bincount(kinds[lost], minlength=len(KINDS))
        tallies: dict[str, int] = {}
        for k, kind in enumerate(KINDS):
            tallies[f"{kind}_kept"] = kept_n[k] - int(summarised_n[k]) - int(removed_n[k])
            tallies[f"{kind}_summarised"] = int(summarised_n[k])
            tallies[f"{kind}_removed"] = int(removed_n[k])
        if len(chosen):
            self._items.append((request, chosen, lost, view.transcript_index))
        ti = view.transcript_index
        self._diff_rows.append(
            {
                "request": request,
                "messages_before": len(before),
                "messages_after": len(after),
                "messages_kept": kept,
                "messages_rewritten": rewritten,
                "messages_summarised": removed if summarised else 0,
                "messages_removed": 0 if summarised else removed,
                "messages_written": len(written),
                **{key: tallies[key] for key in _diff_keys()},
            }
        )
        if claims:
            source = self._source_rows(before, range(self._previous_index, max(self._previous_index, ti)))
            if self._template is None:
                self._template = template_texts(self._engine)
            # Tool-call ids live in the rows' structure, not their text: an engine that names the
            # call it cleared (`clear_tool_uses`' placeholders) quotes its source, not an invention.
            self._faith_memo.verified.update(_call_ids(chain(before, appended)))
            result = check_summaries(claims, source, memo=self._faith_memo, template=self._template, index=self._scans)
            self._faith["summaries_checked"] += len(claims)
            self._faith["summary_identifiers"] += result.identifiers
            self._faith["summary_unsupported_identifiers"] += len(result.unsupported)
            self._faith["summary_status_upgrades"] += len(result.upgrades)
            self._faith["summary_status_undetermined"] += result.undetermined
            for token in result.unsupported:
                self._faith_rows.append({"request": request, "finding": "unsupported_identifier", "text": token})
            for sentence in result.upgrades:
                self._faith_rows.append({"request": request, "finding": "status_upgrade", "text": sentence})

    @staticmethod
    def _claims(written: list[Message], before: Sequence[Message]) -> list[str]:
        """The texts of the rows a commit wrote that say something of their own: an empty row, or one
        that repeats a row of the history it was given word for word (the host's restored user turn,
        a restated ask), claims nothing, so it is no summary."""
        texts = list(filter(None, map(content_text, written)))
        if not texts:
            return texts
        given = set(map(content_text, before))
        # Checked as sent: a lone surrogate an engine copied from its input goes out as U+FFFD.
        return [strip_surrogates(text) for text in texts if text not in given]

    def _summary_targets(self, summary_texts: list[str]) -> set[int]:
        """Targets named in the rows the engine wrote at this commit."""
        found: set[int] = set()
        for text in summary_texts:
            found |= self._scan_text(message_payload({"role": "assistant", "content": text}))
        return found

    def _source_rows(self, before: Sequence[Message], appended: range) -> list[str]:
        """The payloads of what the engine summarised: the history before the commit, then the
        transcript rows appended since. A history row's payload is a function of its content object,
        the value of its tool calls and whether it carries ``api_content``: a commit hands over
        copies of the rows it keeps that share the content object (the tool-call list is often
        copied), and a row the host appended shares its transcript row's content, so the payload,
        and the hash of it the check's memos look up, is computed once per row; transcript rows'
        payloads were rendered once with the targets."""
        memo = self._history_payloads  # id(content) -> (content, tool calls, api_content?, payload)
        rendered = self._transcript_payloads()
        kept: dict[int, tuple[Any, Any, bool, str]] = {}
        rows = []
        for message in before:
            content, calls, own = message.get("content"), message.get("tool_calls"), bool(message.get("api_content"))
            hit = memo.get(id(content)) or rendered.get(id(content))
            if hit is None or hit[0] is not content or hit[2] is not own or not (hit[1] is calls or hit[1] == calls):
                hit = (content, calls, own, _given_payload(message))
            kept[id(content)] = hit
            rows.append(hit[3])
        self._history_payloads = kept  # only rows still in the history: memory stays one history
        transcript = self._scans.payloads
        rows.extend(transcript[i] for i in appended)
        return rows

    def _transcript_payloads(self) -> dict[int, tuple[Any, Any, bool, str]]:
        """The transcript rows' payloads (rendered with the targets) in :meth:`_source_rows`' memo
        form, for the history rows that share their content (built at the first commit)."""
        if self._rendered is None:
            self._rendered = {
                id(message.get("content")): (message.get("content"), message.get("tool_calls"), False, payload)
                for message, payload in zip(self._transcript.messages, self._scans.payloads, strict=False)
                if not message.get("api_content")
            }
        return self._rendered

    # ------------------------------------------------------------------ end of run

    def summary(self) -> dict[str, Any]:
        if not self._bound:
            return {}
        out: dict[str, Any] = {}
        if self._has_facts:
            out.update(self._fact_summary())
        if self.facts_only:
            return out
        out["facts_source"] = self._set.facts_source
        out["targets_spilled_by_host"] = len(self._host_spilled)
        for kind, (total, n) in sorted(self._kind_sums.items()):
            out[f"{_KIND_COLUMN[kind]}_mean"] = total / n if n else math.nan
            g = self._all[kind]
            out[f"{_KIND_COLUMN[kind]}_final"] = (
                self._present_n[g] / self._eligible_n[g] if self._eligible_n[g] else math.nan
            )
        for group_index, group in enumerate(self._groups):
            if group.kind == "instruction" and group.dimension == "category" and self._eligible_n[group_index]:
                share = self._present_n[group_index] / self._eligible_n[group_index]
                out[f"instruction_retention_final.{group.value}"] = share
        done, checked = self._task_checks
        out["active_task_retention"] = done / checked if checked else math.nan
        out["active_task_lost_after_compaction"] = self._task_lost_after_commit
        out.update(self._faith)
        return out

    def _fact_summary(self) -> dict[str, Any]:
        g = self._all["fact"]
        eligible, present = self._eligible_n[g], self._present_n[g]
        out: dict[str, Any] = {
            "facts": len(self._facts),
            "fact_retention_mean": sum(self._retentions) / len(self._retentions) if self._retentions else math.nan,
            "fact_retention_final": present / eligible if eligible else math.nan,
        }
        needed = [t for t in self._facts if self._eligible[t] and self._targets[t].needed_later]
        out["needed_facts_retained_final"] = (
            sum(1 for t in needed if self._counts[t] > 0) / len(needed) if needed else math.nan
        )
        for index, group in enumerate(self._groups):
            if group.kind != "fact" or group.dimension == "all" or not self._eligible_n[index]:
                continue
            share = self._present_n[index] / self._eligible_n[index]
            if group.dimension == "category":
                out[f"fact_retention_final.{group.value}"] = share
            elif not self.facts_only:
                out[f"fact_retention_final.origin_{group.value}"] = share
        if self.facts_only:
            return out
        out["fact_retention_recoverable_final"] = (
            (present + self._recoverable_n[g]) / eligible if eligible else math.nan
        )
        reaches = [r for t, r in self._reach.items() if self._eligible[t] and self._counts[t] == 0]
        missing = eligible - present
        for calls in range(1, self.k + 1):
            hit = sum(1 for r in reaches if r.calls is not None and r.calls <= calls)
            out[f"facts_reachable_at_{calls}"] = hit / missing if missing and self._oracle else math.nan
        out["recovery_tokens_mean"] = (
            sum(r.tokens for r in reaches) / len(reaches) if reaches and self._oracle else math.nan
        )
        out["recovery_tools"] = bool(self._oracle)
        out["refetch_needs"] = self._refetch_needs
        out["refetch_missing"] = self._refetch_missing
        out["refetch_calls"] = len(self._refetch_calls)
        out["refetch_tokens"] = self._refetch_tokens
        return out

    def frames(self, labels: Mapping[str, Any] | None = None) -> dict[str, pd.DataFrame]:
        """``probes`` (per request and target group), ``compaction_diff``, ``compaction_items``,
        ``faithfulness``: the long-form tables behind the summary (``docs/metrics.md`` §Frames),
        each led by ``labels`` as constant columns (the run's transcript, engine and params)."""
        if not self._bound or self.facts_only:
            return {}
        labels = labels or {}
        return {
            "probes": self._probe_frame(labels),
            "compaction_diff": _labelled(DIFF_COLUMNS, _int_columns(self._diff_rows, DIFF_COLUMNS), labels),
            "compaction_items": self._item_frame(labels),
            "faithfulness": _labelled(["request", "finding", "text"], self._faith_rows or None, labels),
        }

    def finish(self, result: Any) -> None:
        """After the run: break causes and cost, engine diagnostics, and the frames (``result.frames``)."""
        from contextlab.measure.breaks import attribute_breaks
        from contextlab.measure.diagnostics import engine_diagnostics

        if self.facts_only:
            return
        frames = self.frames({name: result.summary.get(name) for name in ("transcript", "engine", "params")})
        trace = result.trace
        if "break_segment" in trace.columns:
            # Counted from the list: a pandas dropna and value_counts of the column cost 0.34 ms a run.
            causes = Counter(cause for cause in attribute_breaks(trace, self.cache_price) if cause is not None)
            result.summary["prefix_break_causes"] = ";".join(f"{cause}={n}" for cause, n in sorted(causes.items()))
            result.summary["break_cost_usd"] = (
                float(trace["break_cost_usd"].sum()) if self.cache_price is not None else math.nan
            )
        result.summary.update(engine_diagnostics(trace, result.compactions, self.max_attempts))
        result.frames.update(frames)


def _labelled(
    columns: list[str], data: Mapping[str, Any] | list[dict[str, Any]] | None, labels: Mapping[str, Any]
) -> pd.DataFrame:
    """A frame of ``data`` (columns by name, or rows; None: no rows) led by ``labels`` as constant
    columns. Built in one go: inserting each label into a built frame cost ~0.4 ms a column (12 per
    run), and an empty frame is a copy of one built once per column set and labels."""
    if data is None:
        return _empty_labelled(tuple(columns), tuple(labels.items())).copy()
    if isinstance(data, list):  # rows (a few per compaction): laid out as columns, pandas infers each
        data = {name: [row[name] for row in data] for name in columns}
    n = len(data[columns[0]])
    # Each label a take of one value: pandas infers its type once, not over n copies (a string
    # label of a 43,000-row frame: 0.2 ms against 6.6 ms).
    every_row = np.zeros(n, dtype=np.intp)
    built = {name: _strings([value], every_row) for name, value in labels.items()}
    for name in columns:  # a dict in column order: pandas takes it as is (``columns=`` reindexes it)
        built[name] = data[name]
    return pd.DataFrame(built)


def _int_columns(rows: list[dict[str, int]], columns: list[str]) -> dict[str, np.ndarray] | None:
    """Rows of integers as int64 columns (None: no rows): one array for all of them, not a list per
    column whose type pandas infers value by value (what it would infer: int64)."""
    if not rows:
        return None
    matrix = np.array([[row[name] for name in columns] for row in rows], dtype=np.int64)
    return {name: matrix[:, i] for i, name in enumerate(columns)}


@functools.lru_cache(maxsize=64)
def _empty_labelled(columns: tuple[str, ...], labels: tuple[tuple[str, Any], ...]) -> pd.DataFrame:
    """A frame with no rows: the labels typed as in a frame with rows, the other columns ``object``
    (built as one dict: inserting the labels into an empty frame cost ~1 ms each in a new process)."""
    no_rows = np.zeros(0, dtype=np.intp)
    built = {name: _strings([value], no_rows) for name, value in labels}
    for name in columns:
        built[name] = np.empty(0, dtype=object)
    return pd.DataFrame(built)


def _strings(values: Sequence[Any], index: np.ndarray) -> Any:
    """``values[index]`` as a frame column. pandas infers a column's type value by value; here it
    infers it once over ``values`` (each distinct label once) and the column is a take of that."""
    distinct = np.array(values, dtype=object)
    if all(type(value) is str for value in values):
        # All strings: the dtype inference would give is known, and naming it costs a third as much.
        return pd.array(distinct, dtype=_TEXT).take(index)
    return pd.Series(distinct).array.take(index)


_TEXT: Any = pd.Series(["text"]).dtype  # Any: pandas-stubs types pd.array(dtype=) as named dtypes only
"""The dtype pandas infers for a column of strings (read at import: ``str`` in pandas 3, object before)."""


def _diff_keys() -> list[str]:
    return [f"{kind}_{outcome}" for kind in KINDS for outcome in ("kept", "summarised", "removed")]


DIFF_COLUMNS = [
    "request",
    "messages_before",
    "messages_after",
    "messages_kept",
    "messages_rewritten",
    "messages_summarised",
    "messages_removed",
    "messages_written",
    *_diff_keys(),
]
ITEM_COLUMNS = [
    "request",
    "kind",
    "key",
    "text",
    "category",
    "origin",
    "outcome",
    "needed_later",
    "later_uses",
    "next_use",
]


def _given_payload(message: Message) -> str:
    """The payload of a history row for the faithfulness check, in the form a request sends it
    (string content stripped, argument JSON with sorted keys: neither changes which identifiers a
    line holds nor what it says of them), so the probe's scans of the rows it saw sent answer it
    without a search. A row whose sent text is another one (``api_content``) keeps its own text:
    that is what the engine was given."""
    return message_payload(message if message.get("api_content") else wire_message(message))


def _call_ids(rows: Iterable[Message]) -> Iterator[str]:
    """The tool-call ids the rows make or answer."""
    for row in rows:
        answers, calls = row_call_ids(row)
        yield from answers
        yield from filter(None, calls)


def merged_summary(old: Message, new: Message) -> str | None:
    """The summary a compaction merged into a row the history had, or None. A row that carries the
    host's summary flag now (``_compressed_summary``) and did not before holds the summary beside its
    own text: after the merged-context delimiter (the summary follows the row's words), else up to
    the end marker (the summary opens the row), else the whole row."""
    if not new.get(SUMMARY_KEY) or old.get(SUMMARY_KEY):
        return None
    text = content_text(new)
    if hermes_texts.PRIOR_DELIMITER in text:
        return text.split(hermes_texts.PRIOR_DELIMITER, 1)[1]
    if hermes_texts.END_MARKER in text:
        return text.split(hermes_texts.END_MARKER, 1)[0]
    return text
