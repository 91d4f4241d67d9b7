"""Which prompt-token count the simulated provider reports back to the engine (``HostSettings.usage_model``).

* ``"exact"`` (default): the tiktoken count of the request plus ``fixed_overhead_tokens``.
* ``"rough"``: the host's own rough estimate of the request as sent plus ``fixed_overhead_tokens``;
  harnesses that drive the real compressor without a provider feed it exactly this.
* ``"recorded"``: the transcript's recorded usage while no compaction or prune has rewritten the
  history (the request is still the recorded one), the exact count afterwards or when none was recorded.

The trace's ``usage_model`` and ``usage_prompt_tokens`` columns say which count was reported.
"""

from __future__ import annotations

USAGE_MODELS = ("exact", "rough", "recorded")


def reported_prompt_tokens(model: str, *, exact: int, rough: int, recorded: int | None, rewritten: bool) -> int:
    """The ``prompt_tokens`` the engine's ``update_from_response`` receives for one request."""
    if model == "rough":
        return rough
    if model == "recorded" and recorded is not None and recorded > 0 and not rewritten:
        return recorded
    return exact
