"""The control channel's controller side: routers running as their own processes connect here.

``listener`` accepts mutual-TLS connections on the ctrl port (``--ctrl-port``), ``session`` serves
one router's connection (hello, requests, pushes, heartbeats), ``messages`` is the one declared
table of what a router may ask, ``frames`` the framing. Each request goes to that router's
``controller.router_link.RouterLink``, the same adapter the embedded router uses in-process.
The protocol is documented in ``docs/control-channel.md``.
"""
