"""0.19.0's rough estimates of a history, kept row by row (``hermes_version="0.19.0"``).

0.19.0 rounds once over a whole list's characters, so its estimate of a history is not a sum of
per-row estimates; it is a function of the summed characters and images. These columns keep those
sums cumulatively beside :class:`contextlab.host.history.WorkingHistory`'s rows, for the persisted rows
(the turn-start and post-tool gates estimate them) and for their request copies (the pre-API gate
estimates the request as built: content stripped, tool-call arguments canonical), so every figure is
a lookup.

With a session store, 0.19.0 stamps each row it writes with ``_db_persisted`` (the host stamps its
rows in place: :meth:`contextlab.host.replay.ReplayHost._store_flush`) and its estimators count that key
too. The rows written are always a prefix of the history (a flush writes every row, a compaction makes
new unstamped rows), so the columns keep how many, and how many of those came without the stamp.
"""

from __future__ import annotations

from contextlab.engine import Message
from contextlab.host.user_turn import DB_PERSISTED_KEY
from contextlab.messages import wire_message
from contextlab.tokens import legacy_message_chars, legacy_tokens

STORE_MARKER_CHARS = len(", '_db_persisted': True")
"""What 0.19.0's session store adds to the repr of a row it has written (``, '_db_persisted': True``:
the flush stamps the row, and the estimators count every key)."""


class LegacyRoughColumns:
    """Cumulative characters (persisted rows and their request copies) and images of a history."""

    def __init__(self, echo_reasoning: bool) -> None:
        self._echo_reasoning = echo_reasoning
        self._persisted = [0]
        self._sent = [0]
        self._images = [0]
        self._unstamped = [0]  # rows added without the store's stamp, cumulative
        self._stamped = 0  # leading rows the session store has written (and stamped)

    def add(self, row: Message) -> None:
        """Account for ``row``, appended to the history."""
        chars, images = legacy_message_chars(row)
        sent, _ = legacy_message_chars(wire_message(row, self._echo_reasoning))
        # A row added stamped (one the store wrote, kept by a compaction) counts its stamp already.
        self._unstamped.append(self._unstamped[-1] + (DB_PERSISTED_KEY not in row))
        self._persisted.append(self._persisted[-1] + chars)
        self._sent.append(self._sent[-1] + sent)
        self._images.append(self._images[-1] + images)

    def truncate(self, rows: int) -> None:
        """Keep the first ``rows`` rows' sums (the rest are added again, unstamped)."""
        del self._persisted[rows + 1 :], self._sent[rows + 1 :], self._images[rows + 1 :], self._unstamped[rows + 1 :]
        self._stamped = min(self._stamped, rows)

    @property
    def stamped(self) -> int:
        """How many leading rows the session store has written."""
        return self._stamped

    def stamp_all(self) -> None:
        """The session store wrote every row (a flush)."""
        self._stamped = len(self._persisted) - 1

    def _stamps(self) -> int:
        return self._unstamped[self._stamped] * STORE_MARKER_CHARS

    @property
    def persisted_tokens(self) -> int:
        """0.19.0's ``estimate_messages_tokens_rough`` of the persisted rows."""
        return legacy_tokens(self._persisted[-1] + self._stamps(), self._images[-1])

    def sent_tokens(self, extra_chars: int = 0) -> int:
        """The same estimate of the rows' request copies (which keep the store's stamp), with
        ``extra_chars`` more (the system row)."""
        chars = self._sent[-1] + self._stamps() + extra_chars
        return legacy_tokens(chars, self._images[-1])
