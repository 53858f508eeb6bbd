"""An OpenZiti edge router for SDKs: channel V2 over TLS, dial, bind, relay.

It reaches the controller only through :class:`~router.link.ControllerLink`,
which the controller side supplies (``controller/router_link.py``).
"""

from router.link import Caller, ControllerLink, Credentials, Grant, Terminator
from router.server import EdgeRouter

__all__ = ["Caller", "ControllerLink", "Credentials", "EdgeRouter", "Grant", "Terminator"]
