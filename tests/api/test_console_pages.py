"""The Ziti Admin Console's own request sequences, replayed: detail pages, creates, its OIDC login.

The sequences are ZAC's (openziti/ziti-console, ``ZitiControllerDataService`` and the projectable forms):
a detail page loads ``{prefix}/{type}/{id}/`` (``getSubdata(type, id, '')``: note the trailing slash),
then its related listings and pick lists with the console's paging (``?limit=100&offset=0&sort=name asc``,
or ``?filter=(name contains "")&limit=-1&offset=0&sort=name asc`` for name pickers); a create POSTs the
form's model and reads the new entity back by the same trailing-slash URL; a failure of any of these
leaves the page spinning or reports an error although the entity was created. Each test asserts what
the console reads from every answer.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import parse_qs, urlsplit

import pytest

MGMT = "/edge/management/v1"
#: ZitiControllerDataService.getUrlFilter with the forms' paging (noSearch) and the name pickers' (rawFilter)
PAGED = "?limit=100&offset=0&sort=name asc"
NAMES = '?filter=(name contains "")&limit=-1&offset=0&sort=name asc'
INTERCEPT = {"protocols": ["tcp"], "addresses": ["web.ziti"], "portRanges": [{"low": 80, "high": 80}]}
HOST = {"protocol": "tcp", "address": "127.0.0.1", "port": 8080}


def get(ziti_admin, path: str) -> dict:
    """One GET as the console sends it (the session in ``zt-session``); the whole JSON answer."""
    response = ziti_admin.request("GET", MGMT + path)
    assert response.status_code == 200, (path, response.text)
    return response.json()


def listed(ziti_admin, path: str) -> list:
    body = get(ziti_admin, path)
    assert isinstance(body["data"], list) and "pagination" in body["meta"], path
    return body["data"]


@pytest.fixture
def network(ziti_admin, ziti_unique):
    """A service with a config and a terminator, an identity, a policy linking them (as a user would build)."""
    config_types = {t["name"]: t["id"] for t in listed(ziti_admin, "/config-types" + PAGED)}
    config_id = ziti_admin.create(
        "configs", {"name": ziti_unique("intercept"), "configTypeId": config_types["intercept.v1"], "data": INTERCEPT}
    )
    router_id = ziti_admin.create("edge-routers", {"name": ziti_unique("er"), "roleAttributes": ["public"]})
    service_name = ziti_unique("web")
    service_id = ziti_admin.create(
        "services",
        {"name": service_name, "encryptionRequired": True, "roleAttributes": ["web"], "configs": [config_id]},
    )
    terminator_id = ziti_admin.create(
        "terminators", {"service": service_id, "router": router_id, "binding": "transport", "address": "tcp:x:80"}
    )
    identity_id = ziti_admin.create(
        "identities",
        {
            "name": ziti_unique("alice"),
            "type": "User",
            "isAdmin": False,
            "roleAttributes": ["staff"],
            "enrollment": {"ott": True},
        },
    )
    policy_id = ziti_admin.create(
        "service-policies",
        {
            "name": ziti_unique("dial"),
            "type": "Dial",
            "semantic": "AnyOf",
            "identityRoles": ["#staff"],
            "serviceRoles": [f"@{service_id}"],
            "postureCheckRoles": [],
        },
    )
    return {
        "config": config_id,
        "config_types": config_types,
        "router": router_id,
        "service": service_id,
        "service_name": service_name,
        "terminator": terminator_id,
        "identity": identity_id,
        "policy": policy_id,
    }


def test_open_a_service_detail_page(ziti_admin, network):
    service_id = network["service"]
    # ProjectableForm.ngOnInit: getSubdata('services', id, '')
    service = get(ziti_admin, f"/services/{service_id}/")["data"]
    assert service["id"] == service_id and service["name"] == network["service_name"]
    assert service["configs"] == [network["config"]] and service["roleAttributes"] == ["web"]
    assert service["encryptionRequired"] is True and service["terminatorStrategy"] == "smartrouting"
    assert service["_links"]["self"]["href"] == f"./services/{service_id}" and isinstance(service["tags"], dict)
    # ServiceFormComponent.entityUpdated and ngAfterViewInit
    assert "web" in listed(ziti_admin, "/service-role-attributes")
    configs = listed(ziti_admin, f"/services/{service_id}/configs")
    assert [(c["id"], c["configTypeId"]) for c in configs] == [
        (network["config"], network["config_types"]["intercept.v1"])
    ]
    assert configs[0]["name"] and configs[0]["data"] == INTERCEPT
    terminators = listed(ziti_admin, f"/services/{service_id}/terminators")
    assert [t["router"]["name"] for t in terminators] and terminators[0]["id"] == network["terminator"]
    policies = listed(ziti_admin, f"/services/{service_id}/service-policies")
    assert [p["id"] for p in policies] == [network["policy"]] and policies[0]["name"]
    config_types = listed(ziti_admin, "/config-types" + PAGED)
    assert {"intercept.v1", "host.v1"} <= {t["name"] for t in config_types}
    assert all(t["schema"] for t in config_types)  # the config editor builds its form from the schema
    assert network["config"] in [c["id"] for c in listed(ziti_admin, "/configs" + PAGED)]
    assert network["router"] in [r["id"] for r in listed(ziti_admin, "/edge-routers" + PAGED)]


def test_open_an_identity_detail_page(ziti_admin, network):
    identity_id = network["identity"]
    identity = get(ziti_admin, f"/identities/{identity_id}/")["data"]
    assert identity["id"] == identity_id and identity["type"]["name"] == "Default" and identity["isAdmin"] is False
    assert identity["enrollment"]["ott"]["jwt"] and identity["enrollment"]["ott"]["expiresAt"]
    assert identity["roleAttributes"] == ["staff"] and "authPolicyId" in identity and "authenticators" in identity
    services = listed(ziti_admin, f"/identities/{identity_id}/services")
    assert [s["name"] for s in services] == [network["service_name"]]
    assert [p["id"] for p in listed(ziti_admin, f"/identities/{identity_id}/service-policies")] == [network["policy"]]
    assert isinstance(listed(ziti_admin, "/cas" + PAGED), list)
    assert "Default" in [p["name"] for p in listed(ziti_admin, "/auth-policies" + PAGED)]
    assert "staff" in listed(ziti_admin, "/identity-role-attributes")
    # the identities page's enrollment and authenticator look-ups filter on the identity's reference
    enrollments = listed(ziti_admin, f'/enrollments?filter=identity="{identity_id}"')
    assert [(e["method"], e["identityId"]) for e in enrollments] == [("ott", identity_id)]
    assert listed(ziti_admin, f'/authenticators?filter=identity="{identity_id}"') == []
    admin_id = get(ziti_admin, "/current-identity")["data"]["id"]
    mine = listed(ziti_admin, f'/authenticators?filter=identity="{admin_id}"')
    assert [a["method"] for a in mine] == ["updb"]
    assert listed(ziti_admin, f"/identities/{identity_id}/edge-routers") == []
    assert get(ziti_admin, f"/identities/{identity_id}/posture-data")["data"] is not None
    assert get(ziti_admin, f"/identities/{identity_id}/policy-advice/{network['service']}")["data"]["serviceId"]


def test_open_a_policy_detail_page(ziti_admin, network):
    policy_id = network["policy"]
    policy = get(ziti_admin, f"/service-policies/{policy_id}/")["data"]
    assert (policy["type"], policy["semantic"]) == ("Dial", "AnyOf")
    assert policy["identityRoles"] == ["#staff"] and policy["serviceRoles"] == [f"@{network['service']}"]
    assert policy["postureCheckRoles"] == [] and policy["serviceRolesDisplay"] and policy["identityRolesDisplay"]
    # ServicePolicyFormComponent.entityUpdated: attributes and the name pickers (every name, limit -1)
    assert "web" in listed(ziti_admin, "/service-role-attributes")
    assert "staff" in listed(ziti_admin, "/identity-role-attributes")
    names = {s["name"]: s["id"] for s in listed(ziti_admin, "/services" + NAMES)}
    assert names[network["service_name"]] == network["service"]
    assert network["identity"] in [i["id"] for i in listed(ziti_admin, "/identities" + NAMES)]
    assert listed(ziti_admin, "/posture-checks") == []
    assert [s["id"] for s in listed(ziti_admin, f"/service-policies/{policy_id}/services")] == [network["service"]]
    assert [i["id"] for i in listed(ziti_admin, f"/service-policies/{policy_id}/identities")] == [network["identity"]]
    assert listed(ziti_admin, f"/service-policies/{policy_id}/posture-checks") == []
    # an edge router policy and an edge router detail page load the same way
    router = get(ziti_admin, f"/edge-routers/{network['router']}/")["data"]
    assert router["roleAttributes"] == ["public"] and "isOnline" in router and router["enrollmentJwt"]
    assert "public" in listed(ziti_admin, "/edge-router-role-attributes")
    assert listed(ziti_admin, "/posture-check-role-attributes") == []


def test_create_a_service_with_configs(ziti_admin, ziti_unique):
    config_types = {t["name"]: t["id"] for t in listed(ziti_admin, "/config-types" + PAGED)}
    # ServiceFormService.attachConfig: "Create and Attach" POSTs the new config first
    created = ziti_admin.request(
        "POST",
        MGMT + "/configs",
        json={"configTypeId": config_types["host.v1"], "data": HOST, "name": ziti_unique("host")},
    )
    assert created.status_code == 201
    config_id = created.json()["data"]["id"]
    assert config_id
    # ServiceFormService.save: the Service model as the form fills it (terminatorStrategy left empty)
    model = {
        "name": ziti_unique("svc"),
        "encryptionRequired": True,
        "terminatorStrategy": "",
        "roleAttributes": ["web"],
        "tags": {},
        "configs": [config_id],
    }
    response = ziti_admin.request("POST", MGMT + "/services", json=model)
    assert response.status_code == 201, response.text
    service_id = response.json()["data"]["id"]
    assert response.json()["data"]["_links"]["self"]["href"] == f"./services/{service_id}"
    service = get(ziti_admin, f"/services/{service_id}/")["data"]  # read back as the form does
    assert service["configs"] == [config_id] and service["terminatorStrategy"] == "smartrouting"
    assert service["name"] == model["name"] and service["roleAttributes"] == ["web"]
    # editing: PATCH the same model (with the id the form now holds), read back again
    patched = ziti_admin.request("PATCH", MGMT + f"/services/{service_id}", json={**model, "configs": []})
    assert patched.status_code == 200, patched.text
    assert get(ziti_admin, f"/services/{service_id}/")["data"]["configs"] == []


def test_create_a_service_policy(ziti_admin, network, ziti_unique):
    model = {
        "name": ziti_unique("bind"),
        "serviceRoles": ["#web", f"@{network['service']}"],
        "identityRoles": [f"@{network['identity']}"],
        "postureCheckRoles": [],
        "semantic": "AnyOf",
        "type": "Bind",
    }
    response = ziti_admin.request("POST", MGMT + "/service-policies", json=model)
    assert response.status_code == 201, response.text
    policy_id = response.json()["data"]["id"]
    policy = get(ziti_admin, f"/service-policies/{policy_id}/")["data"]
    assert (policy["name"], policy["type"], policy["semantic"]) == (model["name"], "Bind", "AnyOf")
    assert policy["serviceRoles"] == model["serviceRoles"] and policy["identityRoles"] == model["identityRoles"]
    patched = ziti_admin.request("PATCH", MGMT + f"/service-policies/{policy_id}", json={**model, "semantic": "AllOf"})
    assert patched.status_code == 200, patched.text
    assert get(ziti_admin, f"/service-policies/{policy_id}/")["data"]["semantic"] == "AllOf"


def test_the_dashboard_and_session_reads(ziti_admin, network):
    summary = get(ziti_admin, "/summary")["data"]
    assert summary["services"] >= 1 and summary["routers.edge"] >= 1 and summary["identities"] >= 2
    assert get(ziti_admin, "/controller-settings")["data"] is not None
    assert "OIDC_AUTH" in get(ziti_admin, "/enumerated-capabilities")["data"]
    assert isinstance(get(ziti_admin, "/network-jwts")["data"], list)
    assert get(ziti_admin, "/current-identity")["data"]["isAdmin"] is True
    assert get(ziti_admin, "/current-api-session")["data"]["identityId"]
    version = get(ziti_admin, "/version")["data"]
    assert version["apiVersions"]["edge-management"]["v1"]["path"] == MGMT
    routers = ziti_admin.request("GET", "/fabric/v1/routers" + PAGED).json()
    assert routers["meta"]["pagination"]["totalCount"] == summary["routers"]


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def test_the_consoles_oidc_login_redirects_to_its_origin_callback(ziti):
    """ZitiOidcService: redirect_uri is ``{origin}/auth/callback`` (``/zac/`` ignored), accepted by the defaults."""
    redirect_uri = "https://127.0.0.1:1280/auth/callback"
    verifier, challenge = _pkce()
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    params = {
        "client_id": "openziti",
        "response_type": "code",
        "scope": "openid offline_access",
        "state": state,
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "redirect_uri": redirect_uri,
    }
    http = ziti.raw
    reply = http.get("/oidc/authorize", params=params, headers={"accept": "application/json"})
    assert reply.is_redirect, reply.text
    login_page = urlsplit(reply.headers["location"])
    request_id = parse_qs(login_page.query).get("authRequestID", [None])[0]
    if request_id is None:  # fetch follows to the login page; the id is in the final URL or the header
        request_id = http.get(login_page.path + "?" + login_page.query).headers["auth-request-id"]
    reply = http.post(
        "/oidc/login/username",
        data={"id": request_id, "username": "admin", "password": "admin"},
        headers={"accept": "application/json"},
    )
    while reply.is_redirect and not reply.headers["location"].startswith(redirect_uri):
        hop = urlsplit(reply.headers["location"])
        reply = http.get(hop.path + "?" + hop.query)
    location = reply.headers["location"]
    assert location.startswith(redirect_uri + "?")
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == [state] and query["code"][0]
    tokens = http.post(
        "/oidc/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": "openziti",
            "code": query["code"][0],
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
        },
        headers={"accept": "application/json"},
    ).json()
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert http.get(MGMT + "/current-identity", headers=bearer).json()["data"]["isAdmin"] is True
    assert http.get("/fabric/v1/routers", headers=bearer).status_code == 200
    # a redirect URI on another path or host is refused, as by the real defaults
    refused = http.get("/oidc/authorize", params={**params, "redirect_uri": "https://evil.example:1280/auth/callback"})
    assert refused.status_code == 400


# -- the other detail pages and their save flows ------------------------------------------------
#
# Every projectable form saves ``new Model()`` with each model property copied from the form; the
# newer forms (configs, posture checks, JWT signers, auth policies, terminators, identities) also
# merge in every other field the form holds (``mergeUnknownFormProperties``, ``id`` left out), which
# on an edit page is the whole detail answer: ``_links``, ``createdAt``, read-only flags and all.
# The real controller ignores what a create or patch does not define; so must this one. Then the
# form reads the entity back from ``{type}/{id}/`` with the id of the answer (``result.data.id``).


def console_body(model: dict, form: dict | None = None, *, excluded=("id",)) -> dict:
    """The form's save body: each model property from the form, then the form's other fields."""
    form = form if form is not None else model
    body = {key: form.get(key) for key in model}
    body.update({k: v for k, v in form.items() if k not in model and k not in excluded})
    return {k: v for k, v in body.items() if v is not None}  # JSON.stringify drops undefined


def saved(ziti_admin, method: str, collection: str, body: dict, entity_id: str | None = None) -> dict:
    """POST (or PATCH/PUT ``entity_id``) as the console does, then its read-back; the entity."""
    path = MGMT + f"/{collection}" + (f"/{entity_id}" if entity_id else "")
    response = ziti_admin.request(method, path, json=body)
    assert response.status_code in (200, 201), (method, collection, response.text)
    new_id = (response.json().get("data") or {}).get("id") if method == "POST" else entity_id
    assert new_id, response.text
    return get(ziti_admin, f"/{collection}/{new_id}/")["data"]


def test_edge_router_policy_and_service_edge_router_policy_pages(ziti_admin, network, ziti_unique):
    model = {
        "name": ziti_unique("erp"),
        "edgeRouterRoles": ["#public"],
        "identityRoles": ["#staff", f"@{network['identity']}"],
        "semantic": "AnyOf",
        "tags": {},
    }
    erp = saved(ziti_admin, "POST", "edge-router-policies", model)
    assert erp["edgeRouterRoles"] == ["#public"] and erp["edgeRouterRolesDisplay"] and erp["identityRolesDisplay"]
    assert [r["name"] for r in listed(ziti_admin, f"/edge-router-policies/{erp['id']}/edge-routers" + PAGED)]
    assert network["identity"] in [
        i["id"] for i in listed(ziti_admin, f"/edge-router-policies/{erp['id']}/identities" + PAGED)
    ]
    # the pickers' raw-filter paging ({rawFilter: true, filter: '', total: -1, sort: 'name'})
    raw = "?filter=&limit=-1&offset=0&sort=name asc"
    assert "public" in listed(ziti_admin, "/edge-router-role-attributes" + raw)
    assert "staff" in listed(ziti_admin, "/identity-role-attributes" + raw)
    assert network["identity"] in [i["id"] for i in listed(ziti_admin, "/identities" + raw)]
    assert network["router"] in [r["id"] for r in listed(ziti_admin, "/edge-routers" + raw)]
    # the role filter: get('edge-routers', paging with noSearch false) and the attributes filtered in the browser
    searched = listed(ziti_admin, '/edge-routers?filter=(name contains "")&limit=100&offset=0&sort=name asc')
    assert network["router"] in [r["id"] for r in searched]
    edited = saved(
        ziti_admin,
        "PATCH",
        "edge-router-policies",
        console_body(model, {**erp, "semantic": "AllOf"}, excluded=()),
        erp["id"],
    )
    assert edited["semantic"] == "AllOf"

    model = {
        "name": ziti_unique("serp"),
        "edgeRouterRoles": ["#all"],
        "serviceRoles": ["#web"],
        "semantic": "AnyOf",
        "tags": {},
    }
    serp = saved(ziti_admin, "POST", "service-edge-router-policies", model)
    assert [s["id"] for s in listed(ziti_admin, f"/service-edge-router-policies/{serp['id']}/services" + PAGED)] == [
        network["service"]
    ]
    assert network["router"] in [
        r["id"] for r in listed(ziti_admin, f"/service-edge-router-policies/{serp['id']}/edge-routers" + PAGED)
    ]
    assert (
        saved(ziti_admin, "PATCH", "service-edge-router-policies", {**model, "serviceRoles": []}, serp["id"])[
            "serviceRoles"
        ]
        == []
    )


POSTURE_MODEL = {
    "name": "",
    "typeId": "",
    "roleAttributes": [],
    "domains": [],
    "macAddresses": [],
    "operatingSystems": [],
    "process": {"hashes": [], "osType": "", "path": "", "signerFingerprint": ""},
    "timeoutSeconds": 0,
    "tags": {},
}


def test_posture_check_pages(ziti_admin, ziti_unique):
    # the form posts the whole PostureCheck model whatever the type: a MAC check carries an empty process too
    model = {**POSTURE_MODEL, "name": ziti_unique("mac"), "typeId": "MAC", "macAddresses": ["aabbccddeeff"]}
    check = saved(ziti_admin, "POST", "posture-checks", model)
    assert check["typeId"] == "MAC" and check["macAddresses"] == ["aabbccddeeff"] and check["roleAttributes"] == []
    edit = console_body(POSTURE_MODEL, {**check, "macAddresses": ["112233445566"], "roleAttributes": ["lt"]})
    check = saved(ziti_admin, "PATCH", "posture-checks", edit, check["id"])
    assert check["macAddresses"] == ["112233445566"] and check["roleAttributes"] == ["lt"]
    assert "lt" in listed(ziti_admin, "/posture-check-role-attributes")

    model = {**POSTURE_MODEL, "name": ziti_unique("mfa"), "typeId": "MFA", "timeoutSeconds": 0}
    model.update(promptOnWake=True, promptOnUnlock=False, ignoreLegacyEndpoints=False)  # the MFA fields of the form
    mfa = saved(ziti_admin, "POST", "posture-checks", model)
    assert mfa["typeId"] == "MFA" and mfa["promptOnWake"] is True and mfa["timeoutSeconds"] == -1
    model = {
        **POSTURE_MODEL,
        "name": ziti_unique("proc"),
        "typeId": "PROCESS",
        "process": {"hashes": [], "osType": "Windows", "path": "C:\\agent.exe", "signerFingerprint": ""},
    }
    process = saved(ziti_admin, "POST", "posture-checks", model)
    assert process["process"]["osType"] == "Windows" and process["process"]["path"] == "C:\\agent.exe"
    assert [t["id"] for t in listed(ziti_admin, "/posture-check-types")]


def test_jwt_signer_and_auth_policy_pages(ziti_admin, ziti_unique):
    signer_model = {
        "name": ziti_unique("signer"),
        "audience": "zac",
        "issuer": f"https://{ziti_unique('issuer')}.example.com",
        "clientId": "",
        "claimsProperty": "",
        "enabled": True,
        "useExternalId": False,
        "externalAuthUrl": "",
        "kid": "",
        "scopes": [],
        "jwksEndpoint": "https://idp.example.com/.well-known/jwks.json",
        "tags": {},
        "targetToken": "ACCESS",
        "enrollToCertEnabled": False,
        "enrollToTokenEnabled": False,
        "enrollAuthPolicyId": "",
        "enrollNameClaimsSelector": "",
        "enrollAttributeClaimsSelector": "",
    }
    signer = saved(ziti_admin, "POST", "external-jwt-signers", signer_model)
    assert signer["jwksEndpoint"] == signer_model["jwksEndpoint"] and signer["claimsProperty"] == "sub"
    assert signer["enabled"] is True and signer["audience"] == "zac"
    edit = console_body(signer_model, {**signer, "audience": "zac-2"})
    signer = saved(ziti_admin, "PUT", "external-jwt-signers", edit, signer["id"])
    assert signer["audience"] == "zac-2" and signer["jwksEndpoint"] == signer_model["jwksEndpoint"]

    policy_model = {
        "name": ziti_unique("policy"),
        "id": "",
        "primary": {
            "cert": {"allowed": False, "allowExpiredCerts": False},
            "extJwt": {"allowed": True, "allowedSigners": [signer["id"]]},
            "updb": {
                "allowed": True,
                "lockoutDurationMinutes": 0,
                "maxAttempts": 5,
                "minPasswordLength": 5,
                "requireMixedCase": False,
                "requireNumberChar": False,
                "requireSpecialChar": False,
            },
        },
        "secondary": {"requireTotp": False},
        "tags": {},
    }
    policy = saved(ziti_admin, "POST", "auth-policies", console_body(policy_model, excluded=()))
    assert (
        policy["primary"]["extJwt"]["allowedSigners"] == [signer["id"]]
        and policy["primary"]["updb"]["maxAttempts"] == 5
    )
    edit = console_body(policy_model, {**policy, "name": policy["name"] + "-2"}, excluded=())  # id is a model field
    policy = saved(ziti_admin, "PUT", "auth-policies", edit, policy["id"])
    assert policy["name"].endswith("-2") and policy["primary"]["updb"]["allowed"] is True
    assert [
        s["id"]
        for s in listed(ziti_admin, '/external-jwt-signers?filter=(name contains "")&limit=-1&offset=0&sort=name asc')
    ]


def test_config_type_config_and_terminator_pages(ziti_admin, network, ziti_unique):
    config_type = saved(
        ziti_admin, "POST", "config-types", {"name": ziti_unique("ct"), "id": "", "schema": {}, "tags": {}}
    )
    assert config_type["schema"] == {}
    schema = {"type": "object", "properties": {"port": {"type": "integer"}}}
    edited = saved(
        ziti_admin,
        "PATCH",
        "config-types",
        {"name": config_type["name"], "id": config_type["id"], "schema": schema, "tags": {}},
        config_type["id"],
    )
    assert edited["schema"] == schema

    config = get(ziti_admin, f"/configs/{network['config']}/")["data"]
    assert config["configType"]["name"] == "intercept.v1" and config["data"] == INTERCEPT
    assert [s["id"] for s in listed(ziti_admin, f"/configs/{network['config']}/services" + PAGED)] == [
        network["service"]
    ]
    changed = {**INTERCEPT, "addresses": ["web2.ziti"]}
    body = console_body({"name": "", "data": {}, "configTypeId": ""}, {**config, "data": changed})
    assert saved(ziti_admin, "PATCH", "configs", body, config["id"])["data"] == changed
    made = saved(
        ziti_admin,
        "POST",
        "configs",
        {"name": ziti_unique("cfg"), "data": {"port": 80}, "configTypeId": config_type["id"]},
    )
    assert made["configTypeId"] == config_type["id"]

    # the terminator form: every model field, empty strings for what was not picked; routers from /routers
    routers = listed(ziti_admin, '/routers?filter=(name contains "")&limit=-1&offset=0&sort=name asc')
    assert network["router"] in [r["id"] for r in routers]
    model = {
        "service": network["service"],
        "identity": "",
        "router": network["router"],
        "binding": "transport",
        "precedence": "",
        "address": "tcp:127.0.0.1:8080",
        "cost": 0,
        "identitySecret": "",
    }
    terminator = saved(ziti_admin, "POST", "terminators", model)
    assert terminator["precedence"] == "default" and terminator["address"] == model["address"]
    assert terminator["service"]["id"] == network["service"] and terminator["router"]["id"] == network["router"]
    body = console_body(model, {**terminator, "service": network["service"], "router": network["router"], "cost": 5})
    assert saved(ziti_admin, "PATCH", "terminators", body, terminator["id"])["cost"] == 5


def test_certificate_authority_page(ziti_admin, ziti_unique):
    from harness.client import pki as hp

    ca = hp.make_root_ca(ziti_unique("zac-ca"))
    model = {
        "name": ziti_unique("ca"),
        "id": "",
        "isAutoCaEnrollmentEnabled": True,
        "isOttCaEnrollmentEnabled": False,
        "identityRoles": ["from-zac"],
        "identityNameFormat": "",
        "isAuthEnabled": True,
        "certPem": ca.cert_pem,
        "tags": {},
        "verificationToke": "",  # sic: the console's model spells it so
    }
    created = saved(ziti_admin, "POST", "cas", model)
    assert created["isVerified"] is False and created["verificationToken"] and created["identityRoles"] == ["from-zac"]
    assert created["identityNameFormat"]  # the controller's default format, not the empty string sent
    edit = {key: created.get(key, value) for key, value in model.items()}
    edit["identityRoles"] = ["from-zac", "more"]
    assert saved(ziti_admin, "PUT", "cas", edit, created["id"])["identityRoles"] == ["from-zac", "more"]


def test_identity_and_edge_router_pages_save_as_the_forms_do(ziti_admin, network, ziti_unique):
    identity_model = {
        "name": ziti_unique("dev"),
        "type": "Device",
        "appData": {},
        "isAdmin": False,
        "roleAttributes": ["staff"],
        "authPolicyId": "default",
        "externalId": "",
        "defaultHostingCost": 0,
        "defaultHostingPrecedence": "default",
        "tags": {},
        "enrollment": {"ott": True},
    }
    # two identities made by the form both carry externalId "": neither is refused as a duplicate
    response = ziti_admin.request("POST", MGMT + "/identities", json=identity_model)
    assert response.status_code == 201, response.text
    other_model = {**identity_model, "name": ziti_unique("dev"), "defaultHostingPrecedence": ""}
    other = ziti_admin.request("POST", MGMT + "/identities", json=other_model)
    assert other.status_code == 201, other.text  # "" is an optional enum's zero value: the default
    assert (
        get(ziti_admin, f"/identities/{other.json()['data']['id']}/")["data"]["defaultHostingPrecedence"] == "default"
    )
    identity = get(ziti_admin, f"/identities/{response.json()['data']['id']}/")["data"]
    assert (
        identity["type"]["name"] == "Default" and identity["authPolicyId"] == "default"
    )  # Device is stored as Default
    # the edit: type as the detail's type id, no enrollment, every other detail field merged in
    form = {**identity, "roleAttributes": ["staff", "ops"]}
    body = {k: (form["type"]["id"] if k == "type" else form.get(k)) for k in identity_model if k != "enrollment"}
    body.update({k: v for k, v in form.items() if k not in identity_model and k not in ("id", "badges")})
    patched = ziti_admin.request("PATCH", MGMT + f"/identities/{identity['id']}", json=body)
    assert patched.status_code == 200, patched.text
    after = get(ziti_admin, f"/identities/{identity['id']}/")["data"]
    assert after["roleAttributes"] == ["staff", "ops"] and after["type"]["name"] == "Default"
    assert (
        get(ziti_admin, f"/identities/{identity['id']}/policy-advice/{network['service']}")["data"]["isDialAllowed"]
        is True
    )

    router_model = {
        "name": ziti_unique("er"),
        "roleAttributes": ["edge"],
        "appData": {},
        "isTunnelerEnabled": True,
        "noTraversal": False,
        "cost": 0,
        "tags": {},
    }
    router = saved(ziti_admin, "POST", "edge-routers", router_model)
    assert router["isTunnelerEnabled"] is True and router["enrollmentJwt"]
    edited = saved(ziti_admin, "PATCH", "edge-routers", {**router_model, "cost": 10}, router["id"])
    assert edited["cost"] == 10


def test_identity_row_actions_override_reset_and_reissue(ziti_admin, ziti, network, ziti_unique):
    from tests.support import enrolled

    # Override: the identity's service-configs, the pickers' searches, add and remove (a JSON array both ways)
    identity_id = network["identity"]
    assert listed(ziti_admin, f"/identities/{identity_id}/service-configs") == []
    searched = listed(ziti_admin, '/services?filter=(name contains "")&limit=30&offset=0&sort=name desc')
    assert network["service"] in [s["id"] for s in searched]
    assert network["config"] in [
        c["id"] for c in listed(ziti_admin, '/configs?filter=(name contains "")&limit=30&offset=0&sort=name desc')
    ]
    pair = [{"serviceId": network["service"], "configId": network["config"]}]
    added = ziti_admin.request("POST", MGMT + f"/identities/{identity_id}/service-configs", json=pair)
    assert added.status_code == 200, added.text
    overrides = listed(ziti_admin, f"/identities/{identity_id}/service-configs")
    assert [(o["serviceId"], o["configId"]) for o in overrides] == [(network["service"], network["config"])]
    assert overrides[0]["service"]["id"] == network["service"] and overrides[0]["config"]["id"] == network["config"]
    assert overrides[0]["service"]["name"] == network["service_name"] and overrides[0]["config"]["name"]
    removed = ziti_admin.request("DELETE", MGMT + f"/identities/{identity_id}/service-configs", json=pair)
    assert removed.status_code == 200, removed.text
    assert listed(ziti_admin, f"/identities/{identity_id}/service-configs") == []

    # Reissue: an unenrolled identity's enrollment, refreshed by the id the row holds
    identity = get(ziti_admin, f"/identities/{identity_id}/")["data"]
    ott = identity["enrollment"]["ott"]
    assert ott["id"] and ott["jwt"] and ott["token"] and ott["expiresAt"]
    refreshed = ziti_admin.request(
        "POST", MGMT + f"/enrollments/{ott['id']}/refresh", json={"expiresAt": "2099-01-01T00:00:00.000Z"}
    )
    assert refreshed.status_code == 200, refreshed.text
    again = get(ziti_admin, f"/identities/{identity_id}/")["data"]["enrollment"]["ott"]
    assert again["jwt"] and again["jwt"] != ott["jwt"] and again["expiresAt"].startswith("2099-01-01")

    # Reset: an enrolled identity's certificate authenticator re-enrolled, a new one-time token on the row
    enrolled_id, _ = enrolled(ziti_admin, ziti, ziti_unique("enrolled"))
    row = next(i for i in listed(ziti_admin, "/identities?limit=100&offset=0&sort=name asc") if i["id"] == enrolled_id)
    cert_authenticator = row["authenticators"]["cert"]
    assert cert_authenticator["id"] and cert_authenticator["fingerprint"] and not row["enrollment"]
    reset = ziti_admin.request(
        "POST",
        MGMT + f"/authenticators/{cert_authenticator['id']}/re-enroll",
        json={"expiresAt": "2099-01-01T00:00:00.000Z"},
    )
    assert reset.status_code in (200, 201), reset.text
    after = get(ziti_admin, f"/identities/{enrolled_id}/")["data"]
    assert after["enrollment"]["ott"]["jwt"] and not after["authenticators"].get("cert")


def test_the_simple_service_wizard_creates_then_edits(ziti_admin, network, ziti_unique):
    """SimpleServiceComponent: the name-conflict look-ups, two configs by the built-in config type ids it
    hard-codes, the service tagged ``service-type: simple``, a Dial and a Bind policy; then its edit page
    reads them back through the service and PATCHes each with the object it read."""
    name = ziti_unique("simple")
    for collection in ("services", "configs", "configs", "service-policies", "service-policies"):
        assert (
            listed(ziti_admin, f'/{collection}?filter=(name contains "")&limit=100&offset=0&sort=name asc') is not None
        )
    assert listed(ziti_admin, f'/services?filter=name="{name}"') == []
    identities = listed(ziti_admin, '/identities?filter=(name contains "")&limit=30&offset=0&sort=name asc')
    alice = next(i for i in identities if i["id"] == network["identity"])

    intercept = {
        "name": f"{name}-intercept-config",
        "configTypeId": "g7cIWbcGg",
        "data": {"portRanges": [{"high": 443, "low": 443}], "addresses": [f"{name}.ziti"], "protocols": ["tcp", "udp"]},
    }
    host = {
        "name": f"{name}-host-config",
        "configTypeId": "NH5p4FpGR",
        "data": {"address": "127.0.0.1", "port": 8443, "forwardProtocol": True, "allowedProtocols": ["tcp"]},
    }
    config_ids = []
    for body in (intercept, host):
        response = ziti_admin.request("POST", MGMT + "/configs", json=body)
        assert response.status_code == 201, response.text
        config_ids.append(response.json()["data"]["id"])
    service_body = {
        "name": name,
        "roleAttributes": [],
        "configs": config_ids,
        "encryptionRequired": True,
        "tags": {"service-type": "simple"},
    }
    response = ziti_admin.request("POST", MGMT + "/services", json=service_body)
    assert response.status_code == 201, response.text
    service_id = response.json()["data"]["id"]
    for kind in ("Dial", "Bind"):
        policy = {
            "name": f"{name}-{kind.lower()}-policy",
            "type": kind,
            "semantic": "AnyOf",
            "serviceRoles": [f"@{service_id}"],
            "identityRoles": [f"@{alice['id']}", "#staff"],
        }
        response = ziti_admin.request("POST", MGMT + "/service-policies", json=policy)
        assert response.status_code == 201, response.text

    # the edit page
    service = get(ziti_admin, f"/services/{service_id}/")["data"]
    assert service["tags"]["service-type"] == "simple"
    configs = {c["configTypeId"]: c for c in listed(ziti_admin, f"/services/{service_id}/configs")}
    assert configs["g7cIWbcGg"]["data"]["portRanges"][0]["high"] == 443 and configs["NH5p4FpGR"]["data"]["port"] == 8443
    policies = {p["type"].lower(): p for p in listed(ziti_admin, f"/services/{service_id}/service-policies")}
    assert set(policies) == {"dial", "bind"} and sorted(policies["dial"]["identityRoles"]) == sorted(
        [f"@{alice['id']}", "#staff"]
    )

    edited_intercept = {**configs["g7cIWbcGg"]}
    edited_intercept["data"] = {**edited_intercept["data"], "portRanges": [{"high": 8443, "low": 8443}]}
    response = ziti_admin.request("PATCH", MGMT + f"/configs/{edited_intercept['id']}", json=edited_intercept)
    assert response.status_code == 200, response.text
    response = ziti_admin.request("PATCH", MGMT + f"/services/{service_id}", json={**service, "configs": config_ids})
    assert response.status_code == 200, response.text
    dial = {**policies["dial"], "identityRoles": ["#staff"], "serviceRoles": [f"@{service_id}"]}
    response = ziti_admin.request("PATCH", MGMT + f"/service-policies/{dial['id']}", json=dial)
    assert response.status_code == 200, response.text
    assert get(ziti_admin, f"/service-policies/{dial['id']}/")["data"]["identityRoles"] == ["#staff"]
    assert get(ziti_admin, f"/configs/{edited_intercept['id']}/")["data"]["data"]["portRanges"] == [
        {"high": 8443, "low": 8443}
    ]
    assert get(ziti_admin, f"/services/{service_id}/")["data"]["configs"] == config_ids


def test_router_pages_re_enroll_and_the_double_slash_calls(ziti_admin, network, ziti_unique):
    router_id = network["router"]
    # the edge router form: associated services and identities, and its refresh by call('/edge-routers/ID'),
    # which the data service joins to the prefix with a second slash (as the identity form's refresh and test)
    assert listed(ziti_admin, f"/edge-routers/{router_id}/services") == []  # no service edge router policy yet
    serp = {"name": ziti_unique("serp"), "edgeRouterRoles": ["#public"], "serviceRoles": ["#web"], "semantic": "AnyOf"}
    assert ziti_admin.request("POST", MGMT + "/service-edge-router-policies", json=serp).status_code == 201
    assert [s["id"] for s in listed(ziti_admin, f"/edge-routers/{router_id}/services")] == [network["service"]]
    assert isinstance(listed(ziti_admin, f"/edge-routers/{router_id}/identities"), list)
    assert get(ziti_admin, f"//edge-routers/{router_id}")["data"]["id"] == router_id
    assert get(ziti_admin, f"//identities/{network['identity']}")["data"]["id"] == network["identity"]
    advice = get(ziti_admin, f"//identities/{network['identity']}/policy-advice/{network['service']}")["data"]
    # the form's test reads isDialAllowed/isBindAllowed and the router counts (commonCount and onlineCount, which
    # it also reads, are in no controller's answer: the documented commonRouters list is what there is)
    assert {"isDialAllowed", "isBindAllowed", "identityRouterCount", "serviceRouterCount", "commonRouters"} <= set(
        advice
    )
    before = get(ziti_admin, f"/edge-routers/{router_id}/")["data"]
    assert before["versionInfo"]["os"] is not None  # the list renders versionInfo.os.toLowerCase()
    response = ziti_admin.request("POST", MGMT + f"/edge-routers/{router_id}/re-enroll", json={})
    assert response.status_code == 200, response.text
    after = get(ziti_admin, f"/edge-routers/{router_id}/")["data"]
    assert after["enrollmentJwt"] and after["enrollmentToken"]

    # the transit router form posts the EdgeRouter model: fields a transit router lacks are ignored
    model = {
        "name": ziti_unique("tr"),
        "roleAttributes": [],
        "appData": {},
        "isTunnelerEnabled": True,
        "noTraversal": False,
        "cost": 3,
        "tags": {},
    }
    transit = saved(ziti_admin, "POST", "transit-routers", model)
    assert transit["name"] == model["name"] and transit["cost"] == 3 and transit["enrollmentJwt"]
    assert transit["id"] in [r["id"] for r in listed(ziti_admin, "/transit-routers" + PAGED)]
    assert saved(ziti_admin, "PATCH", "transit-routers", {**model, "cost": 7}, transit["id"])["cost"] == 7


def test_the_identity_service_path_follows_the_links(ziti_admin, network):
    """IdentityServicePathComponent: the identity's services and edge routers, then each service's
    ``_links`` hrefs (``./services/ID/...``, with ``./`` cut) and each Bind policy's ``identities`` link."""
    identity_id = network["identity"]
    bind = {
        "name": "path-bind",
        "type": "Bind",
        "semantic": "AnyOf",
        "identityRoles": [f"@{identity_id}"],
        "serviceRoles": ["#web"],
    }
    assert ziti_admin.request("POST", MGMT + "/service-policies", json=bind).status_code == 201
    services = listed(ziti_admin, f"/identities/{identity_id}/services")
    assert isinstance(listed(ziti_admin, f"/identities/{identity_id}/edge-routers"), list)
    service = next(s for s in services if s["id"] == network["service"])
    links = service["_links"]
    for name in ("configs", "service-edge-router-policies", "service-policies"):
        assert links[name]["href"] == f"./services/{service['id']}/{name}", name
    policies = listed(ziti_admin, "/" + links["service-policies"]["href"].replace("./", "", 1))  # JS replace: the first
    binds = [p for p in policies if p["type"] == "Bind"]
    assert binds, policies
    for policy in binds:
        href = policy["_links"]["identities"]["href"]
        assert href == f"./service-policies/{policy['id']}/identities"
        assert identity_id in [i["id"] for i in listed(ziti_admin, "/" + href.replace("./", "", 1))]


def test_api_session_and_session_detail_pages(ziti_admin, ziti):
    """The API sessions page opens ``api-sessions/ID/``; a row's delete ends that session."""
    other = ziti.signed_in("admin", "admin")
    mine = get(ziti_admin, "/current-api-session")["data"]["id"]
    other_id = get(other, "/current-api-session")["data"]["id"]
    page = listed(ziti_admin, "/api-sessions" + "?limit=100&offset=0&sort=createdAt desc")
    assert {mine, other_id} <= {s["id"] for s in page}
    detail = get(ziti_admin, f"/api-sessions/{other_id}/")["data"]
    assert detail["id"] == other_id and detail["identity"]["name"] and "lastActivityAt" in detail
    assert isinstance(listed(ziti_admin, "/sessions?limit=100&offset=0&sort=createdAt desc"), list)
    assert ziti_admin.request("DELETE", MGMT + f"/api-sessions/{other_id}").status_code == 200
    assert other.request("GET", MGMT + "/current-api-session").status_code == 401
