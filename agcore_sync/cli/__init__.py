"""The ``agcore-sync`` command: ``demo`` and ``chat`` (entry point :func:`main`)."""

from agcore_sync.cli.command import main

__all__ = ["main"]
