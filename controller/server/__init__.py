"""The HTTP/TLS server: one asyncio loop for socket I/O and TLS, httptools parsing, worker threads for the app.

``httpserver`` (loop, limits), ``http_connection`` (one connection's state), ``wsgi_bridge`` (environ and
responses), ``tls`` (pyOpenSSL over memory buffers, client chain into the environ), ``lifecycle`` (listeners
started all or none, signals) and ``serve`` (the controller's listeners, banner, readiness).
"""
