"""The OIDC provider's parts, built once for a controller."""

from __future__ import annotations

from controller.oidc.flow import OidcFlow
from controller.oidc.grants import TokenGrants
from controller.oidc.requests import AuthRequests
from controller.oidc.revocations import TokenRevocations
from controller.oidc.sessions import OidcSessions
from controller.oidc.token_info import TokenInfo
from controller.oidc.tokens import Lifetimes, TokenSigner


class Oidc:
    """Signer, revocations, auth requests, login flow, token grants, token info and bearer sessions."""

    def __init__(
        self,
        lifetimes: Lifetimes,
        *,
        pki,
        clock,
        ids,
        store,
        auth,
        identities,
        mfas,
        factors,
        events,
        api_sessions,
        sessions,
        resolve_config_types,
    ):
        self.signer = TokenSigner(pki, clock, ids, lifetimes)
        self.revocations = TokenRevocations(store, clock, lifetimes.refresh)
        self.requests = AuthRequests(clock)
        self.flow = OidcFlow(
            self.requests,
            auth=auth,
            identities=identities,
            mfas=mfas,
            factors=factors,
            events=events,
            clock=clock,
            ids=ids,
            resolve_config_types=resolve_config_types,
        )
        self.grants = TokenGrants(
            self.requests, self.signer, self.revocations, identities=identities, clock=clock, pki=pki
        )
        self.token_info = TokenInfo(self.signer, self.revocations, clock=clock)
        self.sessions = OidcSessions(
            self.signer,
            self.revocations,
            identities=identities,
            factors=factors,
            api_sessions=api_sessions,
            sessions=sessions,
            store=store,
            clock=clock,
        )

    @classmethod
    def from_config(cls, config, **collaborators) -> "Oidc | None":
        """The provider, or None when the configuration turns OIDC off; ``collaborators`` as ``__init__``."""
        if not config.oidc:
            return None
        lifetimes = Lifetimes.from_seconds(
            config.oidc_access_token_seconds, config.oidc_refresh_token_seconds, config.oidc_id_token_seconds
        )
        return cls(lifetimes, **collaborators)
