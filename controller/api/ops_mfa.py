"""TOTP MFA of the current identity, ``/authenticate/mfa``, admin removal and the TOTP token.

Operations with ``auth=PARTIAL`` are the ones a partially authenticated
session may reach (``tests/mfa_ziti_test.go`` of the real controller).
"""

from __future__ import annotations

from controller import errors
from controller.api.call import Call
from controller.api.mappers.mfa import mfa_created_view, recovery_view
from controller.api.operations import ADMIN, BOTH, MANAGEMENT, PARTIAL, SESSION, Operation, operation_defaults
from controller.api.schemas import mfa as mfa_schemas
from controller.clock import rfc3339

CODE_HEADER = "mfa-validation-code"


def enroll_mfa(call: Call, *, mfas) -> dict:
    # NOTE: enrollMfa takes no body: whatever a client sends (often an empty JSON body) is ignored.
    record = mfas.enroll(call.identity, context=call.change)
    return mfa_created_view(record)


def detail_mfa(call: Call, *, mfa_view, mfas) -> dict:
    return mfa_view(mfas.require(call.identity["id"]))


def detail_mfa_qr_code(call: Call, *, mfas) -> None:
    record = mfas.require(call.identity["id"], verified=False)
    call.resp.content_type = "image/png"
    call.resp.data = mfas.qr_png(record)


def verify_mfa(call: Call, *, mfas) -> None:
    # An OIDC session has no record to mark: its token's amr says what was done at login.
    session = None if call.resolved.is_oidc else call.session
    mfas.verify(call.identity["id"], call.body["code"], session, context=call.change)


def delete_mfa(call: Call, *, mfas) -> None:
    mfas.remove_own(call.identity["id"], call.header(CODE_HEADER), context=call.change)


def detail_mfa_recovery_codes(call: Call, *, mfas) -> dict:
    body = call.body if isinstance(call.body, dict) else {}
    code = body.get("code") or call.header(CODE_HEADER)
    record = mfas.recovery_codes(call.identity["id"], code)
    return recovery_view(record)


def create_mfa_recovery_codes(call: Call, *, mfas) -> None:
    mfas.regenerate(call.identity["id"], call.body["code"], context=call.change)


def authenticate_mfa(call: Call, *, mfas) -> None:
    if call.resolved.is_oidc:
        raise errors.BadRequest(
            errors.INVALID_BACKING_TOKEN_TYPE,
            "an OIDC session answers TOTP at /oidc/login/totp during login; this operation is for zt-session sessions",
        )
    mfas.authenticate(call.session, call.body["code"], context=call.change)


def create_totp_token(call: Call, *, mfas, oidc) -> dict:
    """OIDC sessions only: a TOTP code (no recovery code) buys a signed proof of the check, for posture."""
    if not call.resolved.is_oidc:
        raise errors.BadRequest(
            errors.INVALID_BACKING_TOKEN_TYPE,
            "TOTP tokens can only be created for OIDC sessions, the current session uses the zt-session token type",
        )
    mfas.check_totp(call.identity["id"], (call.body or {}).get("code"))
    token, issued_at = oidc.token_info.totp_token(call.resolved.claims)
    return {"token": token, "issuedAt": rfc3339(issued_at)}


def remove_identity_mfa(call: Call, *, mfas) -> None:
    mfas.remove_by_admin(call.param(), context=call.change)


def operations() -> list[Operation]:
    op = operation_defaults(apis=BOTH, auth=PARTIAL, tag="MFA")
    session = operation_defaults(apis=BOTH, auth=SESSION, tag="MFA")
    code, optional_code = mfa_schemas.CODE, mfa_schemas.OPTIONAL_CODE
    return [
        op(
            "authenticateMfa",
            "POST /authenticate/mfa",
            authenticate_mfa,
            "Complete MFA authentication with a TOTP or recovery code",
            body=code,
            reply="empty",
            tag="Authentication",
        ),
        op("detailMfa", "GET /current-identity/mfa", detail_mfa, "Return the MFA enrollment of the current identity"),
        op(
            "enrollMfa",
            "POST /current-identity/mfa",
            enroll_mfa,
            "Start TOTP MFA enrollment for the current identity",
            status=201,
        ),
        session(
            "deleteMfa",
            "DELETE /current-identity/mfa",
            delete_mfa,
            "Disable MFA for the current identity (mfa-validation-code header)",
            reply="empty",
        ),
        op(
            "detailMfaQrCode",
            "GET /current-identity/mfa/qr-code",
            detail_mfa_qr_code,
            "Return the provisioning URL as a QR code PNG",
            reply="raw",
        ),
        op(
            "verifyMfa",
            "POST /current-identity/mfa/verify",
            verify_mfa,
            "Verify an MFA enrollment with a TOTP code",
            body=code,
            reply="empty",
        ),
        session(
            "detailMfaRecoveryCodes",
            "GET /current-identity/mfa/recovery-codes",
            detail_mfa_recovery_codes,
            "Return the MFA recovery codes (TOTP code in the body or header)",
            body=optional_code,
            body_optional=True,
        ),
        session(
            "createMfaRecoveryCodes",
            "POST /current-identity/mfa/recovery-codes",
            create_mfa_recovery_codes,
            "Replace every MFA recovery code",
            body=code,
            reply="empty",
        ),
        session(
            "createTotpToken",
            "POST /current-api-session/totp-token",
            create_totp_token,
            "Create a TOTP token proving a recent TOTP check (OIDC sessions only)",
            body=code,
            tag="Current API Session",
        ),
        op(
            "removeIdentityMfa",
            "DELETE /identities/{id}/mfa",
            remove_identity_mfa,
            "Remove the MFA enrollment of an identity",
            apis=(MANAGEMENT,),
            auth=ADMIN,
            reply="empty",
            tag="Identity",
        ),
    ]
