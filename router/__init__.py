"""An OpenZiti edge router for SDKs: channel V2 over TLS, dial, bind, relay; links to other routers.

It reaches the controller only through :class:`~router.controller_link.ControllerLink`,
which the controller side supplies (``controller/router_link/``). Circuits
cross links between routers (``router/peer_links.py``) along the path the
controller picks; ``docs/architecture.md`` draws the parts.
"""

from router.controller_link import Caller, ControllerLink, Credentials, Grant, Terminator
from router.server import EdgeRouter

__all__ = ["Caller", "ControllerLink", "Credentials", "EdgeRouter", "Grant", "Terminator"]
