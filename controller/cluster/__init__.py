"""A cluster of controllers: the store's writes through a raft log (PySyncObj), membership, status."""
