"""The OIDC provider's parts, built once for a controller."""

from __future__ import annotations

from controller.oidc.flow import OidcFlow
from controller.oidc.grants import TokenGrants
from controller.oidc.requests import AuthRequests
from controller.oidc.revocations import TokenRevocations
from controller.oidc.sessions import OidcSessions
from controller.oidc.tokens import Lifetimes, TokenSigner


class Oidc:
    """Signer, revocations, auth requests, login flow, token grants and bearer sessions."""

    def __init__(self, ctl, lifetimes: Lifetimes):
        self.signer = TokenSigner(ctl.pki, ctl.clock, ctl.ids, lifetimes)
        self.revocations = TokenRevocations(ctl.store, ctl.clock, lifetimes.refresh)
        self.requests = AuthRequests(ctl.clock)
        self.flow = OidcFlow(ctl, self.requests)
        self.grants = TokenGrants(ctl, self.requests, self.signer, self.revocations)
        self.sessions = OidcSessions(ctl, self.signer, self.revocations)

    @classmethod
    def from_config(cls, ctl) -> "Oidc | None":
        """The provider, or None when the configuration turns OIDC off."""
        config = ctl.config
        if not config.oidc:
            return None
        return cls(
            ctl,
            Lifetimes.from_seconds(
                config.oidc_access_token_seconds, config.oidc_refresh_token_seconds, config.oidc_id_token_seconds
            ),
        )
