"""Controller operations: request context, rate limits, snapshots, integrity runs, traces."""
