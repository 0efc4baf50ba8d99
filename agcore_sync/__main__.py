"""``python -m agcore_sync``: the same as the ``agcore-sync`` command."""

import sys

from agcore_sync.cli import main

sys.exit(main())
