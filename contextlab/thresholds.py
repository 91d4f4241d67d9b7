"""The effective threshold of a run, and a once-only warning when a ``threshold_percent`` is clamped.

The host's compressor raises any ``threshold_percent`` to 0.75 below a 512K window and floors the
threshold at 64K tokens (85% of the window when that floor reaches it), so at 32K and 64K windows
every setting gives the same 27,200 / 54,400 tokens (``docs/notebooks.md`` §"The threshold knob").
Other engines take their own fraction (``threshold_fraction``, ``context_threshold``) and ignore
``threshold_percent``. Either way a user moving the knob must be told what it did.
"""

from __future__ import annotations

import threading
import warnings

MINIMUM_CONTEXT_LENGTH = 64_000
"""The smallest window the host accepts (``MINIMUM_CONTEXT_LENGTH``, ``agent/model_metadata.py``); the
compressor's threshold floor is the same number."""

COMPRESSOR_ENGINES: frozenset[str] = frozenset({"compressor", "hermes.compressor"})
"""Engines that apply the host's floor rules to ``threshold_percent``."""


class ThresholdClampedWarning(UserWarning):
    """A ``threshold_percent`` setting did not give ``percent x window`` tokens."""


_seen: set[str] = set()
_seen_lock = threading.Lock()


def nominal_threshold(context_length: int, threshold_percent: float) -> int:
    """``threshold_percent x context_length`` in tokens, what the knob asks for."""
    return int(int(context_length) * float(threshold_percent))


def threshold_note(engine: str, threshold_percent: float | None, context_length: int, effective: int) -> str | None:
    """One line saying why the effective threshold differs from the setting, or None when it does not.

    Args:
        engine: The engine's label (decides the reason given).
        threshold_percent: The setting (None when the run kept the engine's own default).
        context_length: The window.
        effective: ``engine.threshold_tokens`` after ``update_model``.
    """
    if threshold_percent is None or effective <= 0:
        return None
    asked = nominal_threshold(context_length, threshold_percent)
    # A token of rounding either way is the engine's int() arithmetic, not a clamp.
    if abs(effective - asked) <= 1:
        return None
    base = engine.split(" ")[0]
    if base in COMPRESSOR_ENGINES:
        reason = "the host's floor" if effective > asked else "the host's cap (threshold_tokens_cap or max_tokens)"
    else:
        reason = f"{base} sets its own threshold (it does not use threshold_percent)"
    return f"threshold_percent {threshold_percent:g} -> {effective:,} tokens: {reason}"


def window_note(context_length: int) -> str | None:
    """One line when the real host would refuse ``context_length``, or None.

    The host's init raises for a model whose window is under :data:`MINIMUM_CONTEXT_LENGTH`
    (``agent/agent_init.py``, PyPI ``hermes-agent`` 0.19.0 and ``NousResearch/hermes-agent``
    @``00035936``). A replay runs such a window anyway (small windows make engines compact sooner,
    which is what studies of them want), and says so.
    """
    if 0 < context_length < MINIMUM_CONTEXT_LENGTH:
        minimum = MINIMUM_CONTEXT_LENGTH
        return f"the real host refuses a window under {minimum:,} tokens; this replay runs {context_length:,}"
    return None


def warn_clamped_once(note: str) -> bool:
    """Issue ``note`` as a :class:`ThresholdClampedWarning` the first time this process sees it.

    Returns:
        True when the warning was issued (False for a repeat).
    """
    with _seen_lock:
        if note in _seen:
            return False
        _seen.add(note)
    warnings.warn(note, ThresholdClampedWarning, stacklevel=3)
    return True


def threshold_label(threshold_tokens: int, context_length: int, note: str | None = None) -> str:
    """``"27,200 tokens (85% of 32,000)"``, plus the clamp note when there is one."""
    share = threshold_tokens / context_length if context_length else 0.0
    label = f"{threshold_tokens:,} tokens ({share:.0%} of {context_length:,})"
    return f"{label}; {note}" if note else label
