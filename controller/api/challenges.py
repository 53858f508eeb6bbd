"""``WWW-Authenticate`` values: the API layer's rendering of the domain's ``errors.Challenge``.

The domain says which realm refused what and why (``Realm``, ``Reason``); the header
text is the real controller's::

    zt-session realm="zt-session" error="invalid" error_description="token is invalid"
    Bearer realm="openziti-primary-ext-jwt" error="expired" error_description="token expired" id="a|b" issuer="x|y"
"""

from __future__ import annotations

from controller.errors import Challenge, Realm, Reason

DESCRIPTIONS = {
    Reason.MISSING: "no matching token was provided",
    Reason.EXPIRED: "token expired",
    Reason.INVALID: "token is invalid",
}


def www_authenticate(challenges: tuple[Challenge, ...]) -> str | None:
    """The header value naming ``challenges`` (comma-joined), or None when there are none."""
    return ",".join(map(_one, challenges)) or None


def _one(challenge: Challenge) -> str:
    scheme = "zt-session" if challenge.realm is Realm.ZT_SESSION else "Bearer"
    reason = challenge.reason
    out = f'{scheme} realm="{challenge.realm.value}" error="{reason.value}" error_description="{DESCRIPTIONS[reason]}"'
    if challenge.signers is not None:
        ids = "|".join(signer_id for signer_id, _ in challenge.signers)
        issuers = "|".join(issuer for _, issuer in challenge.signers)
        out += f' id="{ids}" issuer="{issuers}"'
    return out
