"""A router's terminators (``binding: edge``), as it reports its bindings."""

from __future__ import annotations

import base64


class Terminators:
    """Part of :class:`controller.router_link.RouterLink`: terminators."""

    def add_terminator(self, terminator) -> None:
        known = self.terminators.find(terminator.terminator_id)
        if known is not None and (known.get("router_id"), known.get("service_id")) == (
            self.router_id,
            terminator.service_id,
        ):
            return  # recorded already: a cluster member took it from the router's reconcile, or a resend
        peer = {"1003": base64.b64encode(terminator.host_public_key).decode()} if terminator.host_public_key else {}
        self.terminators.create_system(
            terminator.terminator_id,
            terminator.service_id,
            self.router_id,
            cost=terminator.cost,
            precedence=terminator.precedence,
            instance_id=terminator.instance_id,
            host_id=terminator.identity_id,
            source_ctrl=self.instance_id,
            peer_data=peer,
        )

    def remove_terminator(self, terminator_id: str) -> None:
        self.terminators.delete_system(terminator_id)

    def _drop_terminators(self) -> None:
        """Terminators of this router left by an earlier run: their binders are gone."""
        router = self.routers.find(self.router_id)
        if router is not None:
            with self.store.lock, self.store.transaction():
                self.terminators.delete_for_router(router)
