"""Version, capabilities, protocols, specs, summary and controllers."""

from __future__ import annotations

import platform

from controller import errors
from controller.api.call import Call
from controller.api.dispatch import write_json
from controller.api.envelope import UNLIMITED
from controller.api.openapi import SPEC_IDS, document
from controller.api.operations import ADMIN, BOTH, CLIENT, FABRIC, MANAGEMENT, PREFIXES, PUBLIC, SESSION, Operation
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
        if name == spec_id:
            return api
    raise errors.NotFound("spec", spec_id)


def detail_spec(call: Call, *, started_at) -> dict:
    _spec_api(call.param())
    return _spec_record(call.param(), started_at)


def spec_body(call: Call, *, openapi) -> None:
    api = _spec_api(call.param())
    write_json(call.resp, openapi.document(api))


def summary(call: Call, *, store, cluster) -> dict:
    counts = {key: store.count(table) for key, table in SUMMARY_TABLES.items()}
    routers = store.all("routers")
    counts["routers"] = len(routers)
    counts["routers.edge"] = sum(1 for r in routers if r.get("is_edge"))
    counts["controllers"] = 1 if cluster is None else len(cluster.members())
    counts["eventualEvents"] = 0
    return dict(sorted(counts.items()))


def list_controllers(call: Call, *, controller_view, member_view, cluster) -> Listing:
    items = [controller_view()] if cluster is None else [member_view(m) for m in cluster.members()]
    return Listing(items, {"limit": UNLIMITED, "offset": 0, "totalCount": len(items)})


def operations() -> list[Operation]:
    info = "Informational"
    return [
        Operation(
            "listRoot", "GET", "/", version_info, apis=BOTH, auth=PUBLIC, tag=info, summary="Version information"
        ),
        Operation(
            "listVersion",
            "GET",
            "/version",
            version_info,
            apis=BOTH,
            auth=PUBLIC,
            tag=info,
            summary="Version information",
        ),
        Operation(
            "listEnumeratedCapabilities",
            "GET",
            "/enumerated-capabilities",
            enumerated_capabilities,
            apis=BOTH,
            auth=PUBLIC,
            tag=info,
            summary="Every capability a controller may advertise",
        ),
        Operation(
            "listProtocols",
            "GET",
            "/protocols",
            protocols,
            apis=(CLIENT,),
            auth=PUBLIC,
            tag=info,
            summary="Addresses of the served protocols",
        ),
        Operation(
            "listSpecs",
            "GET",
            "/specs",
            list_specs,
            apis=BOTH,
            auth=PUBLIC,
            reply="list",
            tag=info,
            summary="List the API specifications",
        ),
        Operation(
            "detailSpec",
            "GET",
            "/specs/{id}",
            detail_spec,
            apis=BOTH,
            auth=PUBLIC,
            tag=info,
            summary="Retrieve an API specification record",
        ),
        Operation(
            "detailSpecBody",
            "GET",
            "/specs/{id}/spec",
            spec_body,
            apis=BOTH,
            auth=PUBLIC,
            reply="raw",
            tag=info,
            summary="Return the OpenAPI document of an API",
        ),
        Operation(
            "listSummary",
            "GET",
            "/summary",
            summary,
            apis=(MANAGEMENT,),
            auth=ADMIN,
            tag=info,
            summary="Count the entities of every kind",
        ),
        Operation(
            "listControllers",
            "GET",
            "/controllers",
            list_controllers,
            apis=BOTH,
            auth=SESSION,
            reply="list",
            tag=info,
            summary="List the controllers of the network",
        ),
    ]


__all__ = ["operations", "document"]
