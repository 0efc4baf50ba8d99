"""Agent sessions: turns, cost, hooks, context slots and compaction."""
