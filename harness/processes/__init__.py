"""Processes a test network is made of: a local controller (:mod:`.server`), routers (:mod:`.routers`), a
cluster of controllers (:mod:`.cluster`), the quickstart that starts a controller with its router
(:mod:`.quickstart`), and the owner-only files they keep (:mod:`.files`)."""
