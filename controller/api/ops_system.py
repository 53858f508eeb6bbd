"""Version, capabilities, protocols, specs, summary and controllers."""

from __future__ import annotations

import platform

from controller import errors
from controller.api.call import Call
from controller.api.dispatch import write_json
from controller.api.envelope import UNLIMITED
from controller.api.openapi import SPEC_IDS, document
from controller.api.operations import (
    ADMIN,
    BOTH,
    CLIENT,
    FABRIC,
    MANAGEMENT,
    PREFIXES,
    PUBLIC,
    SESSION,
    Operation,
    operation_defaults,
)
from controller.config import BUILD_DATE, REVISION, VERSION
from controller.store.query import Listing

OIDC_PATH = "/oidc"
ENUMERATED_CAPABILITIES = ["OIDC_AUTH", "HA_CONTROLLER", "OIDC_AUTH_WITH_CSR"]
SUMMARY_TABLES = {
    "services": "services",
    "terminators": "terminators",
    "identities": "identities",
    "identityTypes": "identity_types",
    "authPolicies": "auth_policies",
    "authenticators": "authenticators",
    "enrollments": "enrollments",
    "apiSessions": "api_sessions",
    "apiSessionCertificates": "api_session_certificates",
    "sessions": "sessions",
    "configs": "configs",
    "configTypes": "config_types",
    "edgeRouterPolicies": "edge_router_policies",
    "servicePolicies": "service_policies",
    "serviceEdgeRouterPolicies": "service_edge_router_policies",
    "postureChecks": "posture_checks",
    "postureCheckTypes": "posture_check_types",
    "cas": "cas",
    "externalJwtSigners": "external_jwt_signers",
    "mfas": "mfas",
    "revocations": "revocations",
}


def version_info(call: Call, *, config, oidc, cluster) -> dict:
    base = config.base_url
    client = {"v1": {"apiBaseUrls": [base + PREFIXES[CLIENT]], "path": PREFIXES[CLIENT], "version": "v1"}}
    management = {"v1": {"apiBaseUrls": [base + PREFIXES[MANAGEMENT]], "path": PREFIXES[MANAGEMENT], "version": "v1"}}
    fabric = {"v1": {"apiBaseUrls": [base + PREFIXES[FABRIC]], "path": PREFIXES[FABRIC], "version": "v1"}}
    apis = {"edge": client, "edge-client": client, "edge-management": management, "fabric": fabric}
    capabilities = []
    if oidc is not None:
        # SDKs choose OIDC when they see both the capability and the edge-oidc entry.
        # OIDC_AUTH_WITH_CSR: a login's csrPem comes back signed as session_cert (controller/oidc/grants.py)
        capabilities.extend(("OIDC_AUTH", "OIDC_AUTH_WITH_CSR"))
        apis["edge-oidc"] = {"v1": {"apiBaseUrls": [base + OIDC_PATH], "path": OIDC_PATH, "version": "v1"}}
    if cluster is not None:
        capabilities.append("HA_CONTROLLER")
    return {
        "version": VERSION,
        "revision": REVISION,
        "buildDate": BUILD_DATE,
        "runtimeVersion": f"python{platform.python_version()}",
        "capabilities": capabilities,
        "apiVersions": apis,
    }


def enumerated_capabilities(call: Call) -> list:
    return list(ENUMERATED_CAPABILITIES)


def protocols(call: Call, *, config) -> dict:
    return {"https": {"address": config.api_address}}


def _spec_record(spec_id: str, started: str) -> dict:
    return {
        "_links": {"self": {"href": f"./specs/{spec_id}"}, "spec": {"href": f"./specs/{spec_id}/spec"}},
        "id": spec_id,
        "name": spec_id,
        "createdAt": started,
        "updatedAt": started,
        "tags": {},
    }


def list_specs(call: Call, *, started_at) -> Listing:
    # NOTE: the real controller lists only the client spec, on both APIs.
    return Listing([_spec_record("edge-client", started_at)], {"limit": UNLIMITED, "offset": 0, "totalCount": 1})


def _spec_api(spec_id: str) -> str:
    for api, name in SPEC_IDS.items():
        if name == spec_id and api != FABRIC:  # as the real one: the fabric document only at /fabric/v1/swagger.json
            return api
    raise errors.NotFound("spec", spec_id)


def detail_spec(call: Call, *, started_at) -> dict:
    _spec_api(call.param())
    return _spec_record(call.param(), started_at)


def spec_body(call: Call, *, openapi) -> None:
    api = _spec_api(call.param())
    write_json(call.resp, openapi.document(api))


class SwaggerDocument:
    """``<prefix>/swagger.json``: an API's document where the real controller serves it (the fabric one only there)."""

    def __init__(self, api: str):
        self.api = api

    def on_get(self, req, resp):
        write_json(resp, req.context.api.openapi.document(self.api))


def swagger_routes():
    """``(path, resource)`` of every API's ``swagger.json``."""
    for api, prefix in PREFIXES.items():
        yield f"{prefix}/swagger.json", SwaggerDocument(api)


def summary(call: Call, *, database, edge_routers, cluster) -> dict:
    tables = database.counts([*SUMMARY_TABLES.values(), "routers"])
    counts = {key: tables[table] for key, table in SUMMARY_TABLES.items()}
    counts["routers"] = tables["routers"]
    counts["routers.edge"] = len(edge_routers.of_kind.get(True))
    counts["controllers"] = 1 if cluster is None else len(cluster.members())
    counts["eventualEvents"] = 0
    return dict(sorted(counts.items()))


def list_controllers(call: Call, *, controller_view, member_view, cluster) -> Listing:
    items = [controller_view()] if cluster is None else [member_view(m) for m in cluster.members()]
    return Listing(items, {"limit": UNLIMITED, "offset": 0, "totalCount": len(items)})


def operations() -> list[Operation]:
    op = operation_defaults(apis=BOTH, auth=PUBLIC, tag="Informational")
    return [
        op("listRoot", "GET /", version_info, "Version information"),
        op("listVersion", "GET /version", version_info, "Version information"),
        op(
            "listEnumeratedCapabilities",
            "GET /enumerated-capabilities",
            enumerated_capabilities,
            "Every capability a controller may advertise",
        ),
        op("listProtocols", "GET /protocols", protocols, "Addresses of the served protocols", apis=(CLIENT,)),
        op("listSpecs", "GET /specs", list_specs, "List the API specifications", reply="list"),
        op("detailSpec", "GET /specs/{id}", detail_spec, "Retrieve an API specification record"),
        op("detailSpecBody", "GET /specs/{id}/spec", spec_body, "Return the OpenAPI document of an API", reply="raw"),
        op("listSummary", "GET /summary", summary, "Count the entities of every kind", apis=(MANAGEMENT,), auth=ADMIN),
        op(
            "listControllers",
            "GET /controllers",
            list_controllers,
            "List the controllers of the network",
            auth=SESSION,
            reply="list",
        ),
    ]


__all__ = ["operations", "document", "swagger_routes"]
