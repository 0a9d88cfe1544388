"""``python -m ssestate`` and the ``ssestate`` console script."""

from __future__ import annotations

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
