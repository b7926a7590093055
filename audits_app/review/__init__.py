"""Staff review screens under /review/: queues, blind spot-checks, imports and agreement."""
