"""Posture checks of every real type (OS, PROCESS, PROCESS_MULTI, DOMAIN, MAC, MFA) and their types."""

from __future__ import annotations

from controller.entities import ENTITIES
from controller.errors import FieldError
from controller.model import schema as s
from controller.model.base import Attr, EntityManager, name_field, scalar, set_field, snake
from controller.model.validation import validate
from controller.policy.posture import parse_range
from controller.policy.roles import validate_role_attributes
from controller.store.query import Field

TYPES = ("OS", "PROCESS", "DOMAIN", "MAC", "MFA", "PROCESS_MULTI")
OS_TYPES = ("Windows", "WindowsServer", "Android", "iOS", "Linux", "macOS")
STRINGS = {"type": "array", "items": {"type": "string"}}
OPERATING_SYSTEM = s.obj({"type": s.enum(*OS_TYPES), "versions": STRINGS}, required=("type", "versions"))
PROCESS = s.obj(
    {"osType": s.enum(*OS_TYPES), "path": s.string(min_length=1), "hashes": STRINGS, "signerFingerprint": s.string()},
    required=("osType", "path"),
)
PROCESS_MULTI = s.obj(
    {"osType": s.enum(*OS_TYPES), "path": s.string(min_length=1), "hashes": STRINGS, "signerFingerprints": STRINGS},
    required=("osType", "path"),
)
TYPE_SCHEMAS = {
    "OS": s.obj(
        {"operatingSystems": {"type": "array", "items": OPERATING_SYSTEM, "minItems": 1}},
        required=("operatingSystems",),
    ),
    "PROCESS": s.obj({"process": PROCESS}, required=("process",)),
    "PROCESS_MULTI": s.obj(
        {"semantic": s.SEMANTIC, "processes": {"type": "array", "items": PROCESS_MULTI, "minItems": 1}},
        required=("semantic", "processes"),
    ),
    "DOMAIN": s.obj({"domains": {**STRINGS, "minItems": 1}}, required=("domains",)),
    "MAC": s.obj({"macAddresses": {**STRINGS, "minItems": 1}}, required=("macAddresses",)),
    "MFA": s.obj(
        {
            "timeoutSeconds": s.integer(),
            "promptOnWake": s.BOOLEAN,
            "promptOnUnlock": s.BOOLEAN,
            "ignoreLegacyEndpoints": s.BOOLEAN,
        }
    ),
}
TYPE_FIELDS = {kind: tuple(schema["properties"]) for kind, schema in TYPE_SCHEMAS.items()}
ALL_TYPE_FIELDS = tuple(dict.fromkeys(f for fields in TYPE_FIELDS.values() for f in fields))


def snake_keys(value):
    if isinstance(value, dict):
        return {snake(k): snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def camel_keys(value):
    if isinstance(value, dict):
        return {_camel(k): camel_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    return value


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class PostureCheckManager(EntityManager):
    declaration = ENTITIES["posture_checks"]
    attrs = (
        Attr("name"),
        Attr("typeId", on_update=False),
        Attr("roleAttributes", default=list),
        *(Attr(name) for name in ALL_TYPE_FIELDS),
    )
    filter_fields = (
        name_field(),
        scalar("typeId", "string"),
        Field("promptOnWake", "bool", lambda r: bool(r.get("prompt_on_wake"))),
        Field("promptOnUnlock", "bool", lambda r: bool(r.get("prompt_on_unlock"))),
        Field("isSystem", "bool", lambda r: False),
        set_field("roleAttributes", "role_attributes"),
    )

    def prepare(self, record: dict, old: dict | None, body: dict) -> None:
        if old is not None:
            wanted = body.get("typeId")
            if wanted is not None and wanted != old["type_id"]:
                raise FieldError("typeId", "the type of a posture check can not be changed", wanted)
            record["type_id"] = old["type_id"]
        kind = record["type_id"]
        record["role_attributes"] = validate_role_attributes(record.get("role_attributes"))
        wire = {name: record.get(snake(name)) for name in TYPE_FIELDS[kind] if record.get(snake(name)) is not None}
        validate(TYPE_SCHEMAS[kind], camel_keys(wire) if kind != "MFA" else wire)
        for name in ALL_TYPE_FIELDS:
            if name not in TYPE_FIELDS[kind]:
                record.pop(snake(name), None)
        record["version"] = 1
        getattr(self, "_prepare_" + kind.lower(), lambda r: None)(record)

    def _prepare_os(self, record: dict) -> None:
        record["operating_systems"] = snake_keys(record["operating_systems"])
        for entry in record["operating_systems"]:
            for version in entry.get("versions") or []:
                try:
                    parse_range(version)
                except ValueError as ex:
                    raise FieldError("operatingSystems", f"invalid version range: {ex}", version) from ex

    def _prepare_process(self, record: dict) -> None:
        record["process"] = snake_keys(record["process"])

    def _prepare_process_multi(self, record: dict) -> None:
        record["processes"] = snake_keys(record["processes"])

    def _prepare_mfa(self, record: dict) -> None:
        timeout = record.get("timeout_seconds")
        record["timeout_seconds"] = timeout if isinstance(timeout, int) and timeout > 0 else -1
        for key in ("prompt_on_wake", "prompt_on_unlock", "ignore_legacy_endpoints"):
            record[key] = bool(record.get(key))


class PostureCheckTypeManager(EntityManager):
    """The built-in posture check types (read only)."""

    declaration = ENTITIES["posture_check_types"]
    filter_fields = (name_field(),)
