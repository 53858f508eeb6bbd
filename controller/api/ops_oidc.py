"""The ``/oidc`` endpoints over HTTP: parse, call the OIDC domain, render.

Login and TOTP endpoints answer a bare Ziti error ``{"code", "message"}``;
the token and authorize endpoints answer OAuth errors ``{"error",
"error_description"}``. Nothing here decides anything: ``controller.oidc``
does.
"""

from __future__ import annotations

import base64
import binascii
import functools
import logging
from urllib.parse import unquote, unquote_plus

import falcon
import orjson

from controller import errors
from controller.api.auth_wire import auth_request, oidc_queries
from controller.api.bearer import bearer_tokens, oauth_bearer
from controller.api.call import change_of
from controller.api.challenges import www_authenticate
from controller.api.dispatch import MAX_BODY
from controller.api.status import status_of
from controller.oidc.flow import LOGIN_METHODS, MAX_ID, LoginOutcome, OAuthError

log = logging.getLogger("controller.oidc")

FORM = "application/x-www-form-urlencoded"
SDK_FIELDS = {
    "sdkType": "type",
    "sdkVersion": "version",
    "sdkRevision": "revision",
    "sdkBranch": "branch",
    "sdkAppId": "appId",
    "sdkAppID": "appId",
    "sdkAppVersion": "appVersion",
}
ENV_FIELDS = {
    "envArch": "arch",
    "envOs": "os",
    "envOsRelease": "osRelease",
    "envOsVersion": "osVersion",
    "envHostname": "hostname",
    "envDomain": "domain",
}


def issuer_of(req) -> str:
    """``https://<Host>/oidc``: the issuer of the request, as the real controller derives it."""
    return f"{req.scheme}://{req.netloc}/oidc"


def first_values(text: str) -> dict:
    """First value of each field of a query string or form body (the C SDK repeats ``state``; the first ``code`` wins).

    ``{k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}``, without its cost per pair:
    only a name or value holding ``%`` or ``+`` is decoded (UTF-8, invalid bytes replaced).
    """
    out: dict[str, str] = {}
    for pair in text.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        if "%" in name or "+" in name:
            name = unquote_plus(name, errors="replace")
        if name not in out:
            out[name] = unquote_plus(value, errors="replace") if "%" in value or "+" in value else value
    return out


def query_values(req) -> dict:
    """First value of each query field, from the parse Falcon made when it built the request (not parsed again).

    What :func:`first_values` reads from the query string, save a field with an empty name.
    """
    return {name: value[0] if isinstance(value, list) else value for name, value in req.params.items()}


def read_raw(req) -> bytes:
    if req.content_length is not None and req.content_length > MAX_BODY:
        raise errors.TooLarge()
    raw = req.bounded_stream.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise errors.TooLarge()
    return raw


def read_form(req) -> dict:
    """Form fields of a POST (and the query string's for those missing)."""
    # The listener always sets the length it read (chunked framing removed): 0 is no body at all.
    fields = first_values(read_raw(req).decode("utf-8", errors="replace")) if req.content_length != 0 else {}
    if not req.query_string:
        return fields
    return {**query_values(req), **fields}


def read_login_body(req) -> dict:
    """A login body: JSON or a form (nested SDK/env fields flattened); 415 for anything else."""
    raw = read_raw(req)
    media = (req.content_type or "").split(";")[0].strip().lower()
    if not raw.strip():
        return {}
    if media == FORM:
        return unflatten(first_values(raw.decode("utf-8", errors="replace")))
    if media in ("application/json", "") or media.endswith("+json"):
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise errors.BadRequest(errors.COULD_NOT_PARSE_BODY, "the body is not valid JSON") from None
        return body if isinstance(body, dict) else {}
    raise errors.ControllerError(errors.UNSUPPORTED_MEDIA_TYPE, f"content type {media!r} is not supported")


def unflatten(form: dict) -> dict:
    body = {k: v for k, v in form.items() if k not in SDK_FIELDS and k not in ENV_FIELDS}
    sdk = {SDK_FIELDS[k]: v for k, v in form.items() if k in SDK_FIELDS}
    env = {ENV_FIELDS[k]: v for k, v in form.items() if k in ENV_FIELDS}
    if sdk:
        body["sdkInfo"] = sdk
    if env:
        body["envInfo"] = env
    return body


def request_id_of(req, body: dict):
    """The auth request id: body ``id``, else query ``authRequestID``, else query ``id``."""
    value = body.get("id") or req.get_param("authRequestID") or req.get_param("id")
    return value if isinstance(value, str) and len(value) <= MAX_ID else None


def basic_client(req) -> str | None:
    header = req.get_header("Authorization") or ""
    if not header.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(header[len("Basic ") :], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return unquote(decoded.partition(":")[0]) or None


def write(resp, body, status: int = 200) -> None:
    resp.status = falcon.code_to_http_status(status)
    resp.content_type = "application/json"
    resp.data = orjson.dumps(body)


def redirect(resp, location: str) -> None:
    resp.status = falcon.HTTP_302
    resp.set_header("Location", location)


def guarded(handler):
    """Find the OIDC service on the request (the app's bound API); render domain errors as the OIDC endpoints do."""

    def respond(self, req, resp, **params):
        oidc = req.context.api.resolve("oidc")
        if oidc is None:
            raise falcon.HTTPNotFound()
        try:
            handler(self, oidc, req, resp, **params)
        except OAuthError as ex:
            body = {"error": ex.error, "error_description": ex.description} if ex.description else {"error": ex.error}
            write(resp, body, ex.status)
        except errors.ControllerError as ex:
            if isinstance(ex, errors.Unauthorized) and ex.challenges:
                resp.set_header("WWW-Authenticate", www_authenticate(ex.challenges))
            body = {"code": ex.code, "message": ex.message}
            if ex.cause:
                body["cause"] = ex.cause
            write(resp, body, status_of(ex))

    respond.__name__ = handler.__name__
    return respond


class Endpoint:
    """One ``/oidc`` path; one router serves every app, so responders get the request's OIDC service."""


class Discovery(Endpoint):
    @guarded
    def on_get(self, oidc, req, resp):
        resp.content_type = "application/json"
        resp.data = discovery_json(issuer_of(req), oidc.signer.alg)


@functools.lru_cache(maxsize=64)
def discovery_json(issuer: str, alg: str) -> bytes:
    """The discovery document, encoded once per issuer (the ``Host`` a client used) and signing algorithm."""
    return orjson.dumps(discovery(issuer, alg))


def discovery(issuer: str, alg: str) -> dict:
    login = {
        name: f"{issuer}/login/{path}"
        for name, path in (
            ("password", "password"),
            ("cert", "cert"),
            ("ext_jwt", "ext-jwt"),
            ("totp", "totp"),
            ("totp_enroll", "totp/enroll"),
            ("totp_enroll_verify", "totp/enroll/verify"),
            ("auth_queries", "auth-queries"),
        )
    }
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/oauth/token",
        "introspection_endpoint": f"{issuer}/oauth/introspect",
        "userinfo_endpoint": f"{issuer}/userinfo",
        "revocation_endpoint": f"{issuer}/revoke",
        "end_session_endpoint": f"{issuer}/end_session",
        "jwks_uri": f"{issuer}/keys",
        "scopes_supported": ["openid", "offline_access"],
        "response_types_supported": ["code"],
        "grant_types_supported": [
            "authorization_code",
            "refresh_token",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [alg],
        "token_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "ui_locales_supported": ["en"],
        "request_parameter_supported": False,
        "openziti_endpoints": login,
    }


class Keys(Endpoint):
    @guarded
    def on_get(self, oidc, req, resp):
        write(resp, oidc.signer.jwks())


class Authorize(Endpoint):
    """GET (sdk-golang) or POST with the parameters in the query (the C SDK): 302 to the login page."""

    @guarded
    def on_get(self, oidc, req, resp):
        self._start(oidc, req, resp, query_values(req))

    @guarded
    def on_post(self, oidc, req, resp):
        self._start(oidc, req, resp, read_form(req))

    def _start(self, oidc, req, resp, params: dict) -> None:
        _, location = oidc.flow.authorize(
            params,
            issuer=issuer_of(req),
            peer_certs=req.env.get("controller.peer_certs") or [],
            remote_address=req.remote_addr or "",
        )
        redirect(resp, location)


class Callback(Endpoint):
    @guarded
    def on_get(self, oidc, req, resp):
        redirect(resp, oidc.flow.callback(req.get_param("id"), context=change_of(req)))


class Login(Endpoint):
    """``/oidc/login/{password,username,cert,ext-jwt}``: GET names the request, POST logs in."""

    def __init__(self, method: str):
        self.method = method

    @guarded
    def on_get(self, oidc, req, resp):
        request = oidc.requests.get(request_id_of(req, {}))
        resp.set_header("auth-request-id", request.id)
        if self.method in ("password", "username"):
            resp.content_type = "text/html"
            resp.text = (
                "<html><body><form method='post'><input name='username'><input name='password' "
                f"type='password'><input type='hidden' name='id' value='{request.id}'></form></body></html>"
            )
        else:
            resp.content_type = "text/plain"
            resp.text = "please POST to this URL"

    @guarded
    def on_post(self, oidc, req, resp):
        body = read_login_body(req)
        auth = auth_request(
            LOGIN_METHODS[self.method],
            body,
            peer_certs=req.env.get("controller.peer_certs") or [],
            bearer_tokens=bearer_tokens(req.get_header("Authorization")),
            remote_address=req.remote_addr or "",
            context=change_of(req),
        )
        reply_outcome(oidc, resp, oidc.flow.login(request_id_of(req, body), auth))


def reply_outcome(oidc, resp, outcome: LoginOutcome) -> None:
    """Done: 302 to the callback. Factors pending: 200 with the auth queries (and ``totp-required``)."""
    if outcome.complete:
        redirect(resp, oidc.flow.callback_url(outcome.request))
        return
    if outcome.totp_pending:
        resp.set_header("totp-required", "true")
    write(resp, {"authQueries": oidc_queries(outcome.pending, outcome.totp_enrolled)})


class Totp(Endpoint):
    @guarded
    def on_post(self, oidc, req, resp):
        body = read_login_body(req)
        reply_outcome(oidc, resp, oidc.flow.totp(request_id_of(req, body), body.get("code"), context=change_of(req)))


class TotpEnroll(Endpoint):
    @guarded
    def on_post(self, oidc, req, resp):
        body = read_login_body(req)
        write(
            resp,
            req.context.api.resolve("mfa_view")(
                oidc.flow.totp_enroll(request_id_of(req, body), context=change_of(req))
            ),
            201,
        )

    @guarded
    def on_delete(self, oidc, req, resp):
        body = read_login_body(req)
        oidc.flow.totp_enroll_discard(request_id_of(req, body), body.get("code"), context=change_of(req))
        write(resp, {})


class TotpEnrollVerify(Endpoint):
    @guarded
    def on_post(self, oidc, req, resp):
        body = read_login_body(req)
        reply_outcome(
            oidc, resp, oidc.flow.totp_enroll_verify(request_id_of(req, body), body.get("code"), context=change_of(req))
        )


class AuthQueries(Endpoint):
    @guarded
    def on_get(self, oidc, req, resp):
        outcome = oidc.flow.pending_factors(request_id_of(req, {}), context=change_of(req))
        write(resp, {"authQueries": oidc_queries(outcome.pending, outcome.totp_enrolled)})


class Token(Endpoint):
    @guarded
    def on_post(self, oidc, req, resp):
        media = (req.content_type or "").split(";")[0].strip().lower()
        if media not in (FORM, ""):
            raise OAuthError("invalid_request", "the token request must be form encoded")
        reply = oidc.grants.token(
            read_form(req),
            basic_client=basic_client(req),
            issuer=issuer_of(req),
            peer_certs=req.env.get("controller.peer_certs") or [],
        )
        resp.set_header("Cache-Control", "no-store")
        write(resp, reply)


def access_token_of(req, fields: dict) -> str | None:
    """The bearer of the Authorization header (scheme in any case), else the ``access_token`` field."""
    return oauth_bearer(req.get_header("Authorization")) or fields.get("access_token") or None


def client_secret_of(req, form: dict) -> str | None:
    """The client secret of HTTP Basic credentials, else of the form."""
    header = req.get_header("Authorization") or ""
    if header.startswith("Basic "):
        try:
            decoded = base64.b64decode(header[len("Basic ") :], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        secret = unquote(decoded.partition(":")[2])
        if secret:
            return secret
    return form.get("client_secret") or None


class UserInfo(Endpoint):
    """Any method, as the real router registers it: the token from the header, the query or a form body."""

    @guarded
    def on_get(self, oidc, req, resp):
        write(resp, oidc.token_info.userinfo(access_token_of(req, query_values(req)), issuer_of(req)))

    @guarded
    def on_post(self, oidc, req, resp):
        write(resp, oidc.token_info.userinfo(access_token_of(req, read_form(req)), issuer_of(req)))


class Introspect(Endpoint):
    def _introspect(self, oidc, req, resp, form: dict) -> None:
        reply = oidc.token_info.introspect(
            form.get("token"), client_secret=client_secret_of(req, form), client_assertion=form.get("client_assertion")
        )
        write(resp, reply)

    @guarded
    def on_get(self, oidc, req, resp):
        self._introspect(oidc, req, resp, query_values(req))

    @guarded
    def on_post(self, oidc, req, resp):
        self._introspect(oidc, req, resp, read_form(req))


class EndSession(Endpoint):
    @guarded
    def on_get(self, oidc, req, resp):
        redirect(resp, oidc.token_info.end_session(query_values(req), issuer_of(req), context=change_of(req)))

    @guarded
    def on_post(self, oidc, req, resp):
        redirect(resp, oidc.token_info.end_session(read_form(req), issuer_of(req), context=change_of(req)))


class Revoke(Endpoint):
    @guarded
    def on_post(self, oidc, req, resp):
        form = read_form(req)
        client_id = form.get("client_id") or basic_client(req)
        oidc.token_info.revoke(form.get("token"), client_id, context=change_of(req))
        write(resp, None)


class LoggedOut(Endpoint):
    """Where ``end_session`` sends a client by default: a plain line of text."""

    @guarded
    def on_get(self, oidc, req, resp):
        resp.content_type = "text/plain; charset=utf-8"
        resp.text = "signed out successfully"


def oidc_routes():
    """``(path, resource)`` of every ``/oidc`` route (and the root discovery alias)."""
    yield "/oidc/.well-known/openid-configuration", Discovery()
    yield "/.well-known/openid-configuration", Discovery()
    yield "/oidc/keys", Keys()
    yield "/oidc/authorize", Authorize()
    yield "/oidc/authorize/callback", Callback()
    for method in LOGIN_METHODS:
        yield f"/oidc/login/{method}", Login(method)
    yield "/oidc/login/totp", Totp()
    yield "/oidc/login/totp/enroll", TotpEnroll()
    yield "/oidc/login/totp/enroll/verify", TotpEnrollVerify()
    yield "/oidc/login/auth-queries", AuthQueries()
    yield "/oidc/oauth/token", Token()
    yield "/oidc/oauth/introspect", Introspect()
    yield "/oidc/userinfo", UserInfo()
    yield "/oidc/end_session", EndSession()
    yield "/oidc/revoke", Revoke()
    yield "/oidc/logged-out", LoggedOut()
