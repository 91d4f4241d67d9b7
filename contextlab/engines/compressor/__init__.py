"""The built-in ``compressor`` engine (a port of the host's default) and its parts."""

from __future__ import annotations

from contextlab.engines.compressor.engine import CompressorEngine

__all__ = ["CompressorEngine"]
