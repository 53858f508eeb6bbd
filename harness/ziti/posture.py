"""``ziti edge create|update posture-check TYPE ...``: one subcommand per check type, as the real command has.

``create posture-check`` has ``mac``, ``domain``, ``os``, ``mfa``, ``process`` and ``process-multi``;
``update posture-check`` has ``mac``, ``domain``, ``os``, ``mfa`` and ``process``. Values are cleaned as the
real command cleans them (MAC addresses and hashes to lower-case hex, OS names to the API's spelling, duplicates
dropped) before they are sent; ``mac``, ``domain``, ``os``, ``mfa`` and ``process-multi`` print the new id alone,
``process`` prints ``New posture check NAME created with id: ID``. An update PATCHes only what was given, with the
check's ``typeId``; a process update merges the given fields into the check's process.
"""

from __future__ import annotations

import re

from controller.console import USAGE, CliError
from harness.ziti.common import bool_flag, print_json, resolve, send, slices, tags_of

OS_NAMES = {
    "android": "Android",
    "windows": "Windows",
    "windowsserver": "WindowsServer",
    "macos": "macOS",
    "ios": "iOS",
    "linux": "Linux",
}
#: the OSes a process check may name (a process cannot be checked on a phone)
PROCESS_OSES = ("Linux", "macOS", "Windows", "WindowsServer")


def _unique(values):
    return list(dict.fromkeys(values))


def os_name(value: str, *, process: bool = False) -> str:
    name = OS_NAMES.get(value.strip().lower(), "")
    if not name or (process and name not in PROCESS_OSES):
        allowed = "|".join(PROCESS_OSES) if process else "|".join(OS_NAMES.values())
        raise CliError(f"invalid os type [{value}]: expected {allowed}", USAGE)
    return name


def _hex(value: str) -> str:
    return re.sub("[^a-f0-9]+", "", value.lower())


def mac_addresses(values: list[str]) -> list[str]:
    cleaned = []
    for value in values:
        address = _hex(value)
        if not 12 <= len(address) <= 17:
            raise CliError(f"mac address must be 12-17 hex characters, given [{value}], cleaned [{address}]", USAGE)
        cleaned.append(address)
    return _unique(cleaned)


def sha512s(values: list[str]) -> list[str]:
    cleaned = []
    for value in values:
        if not value.strip():
            continue
        digest = _hex(value)
        if len(digest) != 128:
            raise CliError(
                f"a sha512 hash is 128 hex characters, given [{value}] ({len(digest)} after cleaning)", USAGE
            )
        cleaned.append(digest)
    return _unique(cleaned)


def sha1(value: str) -> str:
    digest = _hex(value)
    if len(digest) != 40:
        raise CliError(
            f"a sha1 fingerprint is 40 hex characters, given [{value}] ({len(digest)} after cleaning)", USAGE
        )
    return digest


def domains(values: list[str]) -> list[str]:
    return _unique(v.strip().lower() for v in values if v.strip())


def os_specs(values: list[str]) -> list[dict]:
    """``Windows:10.0.19041:10.0.19042`` -> ``{"type": "Windows", "versions": ["10.0.19041", "10.0.19042"]}``."""
    specs = []
    for index, value in enumerate(values):
        kind, *versions = value.split(":")
        try:
            name = os_name(kind)
        except CliError as ex:
            raise CliError(f"could not parse the os at index [{index}] ({value}): {ex}", USAGE) from ex
        specs.append({"type": name, "versions": [v.strip() for v in versions]})
    return specs


# -- create ------------------------------------------------------------------------


def _base(args, type_id: str) -> dict:
    body = {"name": args.name, "typeId": type_id, "roleAttributes": slices(args.role_attributes) or []}
    tags = tags_of(args)
    if tags is not None:
        body["tags"] = tags
    return body


def _post(args, client, body: dict, *, announce: bool = False) -> str:
    response = send(client, "POST", "/posture-checks", body)
    check_id = response.json()["data"]["id"]
    if args.output_json:
        print_json(response)
        if announce:
            return check_id
    if announce:
        print(f"New posture check {args.name} created with id: {check_id}")
    else:
        print(check_id)
    return check_id


def create_mac(args, client) -> int:
    addresses = mac_addresses(slices(args.mac_addresses) or [])
    if not addresses:
        raise CliError("must specify at least one MAC address with -m (several: comma-separated or repeated)", USAGE)
    _post(args, client, {**_base(args, "MAC"), "macAddresses": addresses})
    return 0


def create_domain(args, client) -> int:
    names = domains(slices(args.domains) or [])
    if not names:
        raise CliError("must specify at least one domain with -d (several: comma-separated or repeated)", USAGE)
    _post(args, client, {**_base(args, "DOMAIN"), "domains": names})
    return 0


def create_os(args, client) -> int:
    _post(args, client, {**_base(args, "OS"), "operatingSystems": os_specs(slices(args.os) or [])})
    return 0


def create_mfa(args, client) -> int:
    body = {
        **_base(args, "MFA"),
        "timeoutSeconds": args.seconds,
        "promptOnWake": bool(args.wake),
        "promptOnUnlock": bool(args.unlock),
        "ignoreLegacyEndpoints": bool(args.ignore_legacy),
    }
    _post(args, client, body)
    return 0


def create_process(args, client) -> int:
    process = {"osType": os_name(args.os, process=True), "path": args.path}
    hashes = sha512s(slices(args.hash_sigs) or [])
    if hashes:
        process["hashes"] = hashes
    if args.signer_fingerprint:
        process["signerFingerprint"] = sha1(args.signer_fingerprint)
    _post(args, client, {**_base(args, "PROCESS"), "process": process}, announce=True)
    return 0


def create_process_multi(args, client) -> int:
    if args.semantic not in ("AllOf", "AnyOf"):
        raise CliError(f"invalid semantic [{args.semantic}]: expected AnyOf|AllOf", USAGE)
    oses = [os_name(o, process=True) for o in args.oses.split(",")]
    paths = args.paths.split(",")
    if len(paths) != len(oses):
        raise CliError("number of paths supplied does not match number of os types supplied", USAGE)
    hashes = [sha512s(group.split("|")) for group in slices(args.hash_sigs) or []]
    signers = [
        _unique(sha1(s) for s in group.split("|") if s.strip()) for group in slices(args.signer_fingerprints) or []
    ]
    processes = []
    for index, (os_type, path) in enumerate(zip(oses, paths)):
        process = {"osType": os_type, "path": path}
        if index < len(hashes):
            process["hashes"] = hashes[index]
        if index < len(signers):
            process["signerFingerprints"] = signers[index]
        processes.append(process)
    body = {**_base(args, "PROCESS_MULTI"), "semantic": args.semantic, "processes": processes}
    response = send(client, "POST", "/posture-checks", body)
    print(response.json()["data"]["id"])
    return 0


# -- update ------------------------------------------------------------------------


def _patch(args, client, type_id: str, body: dict) -> int:
    if args.new_name is not None:
        body["name"] = args.new_name
    if args.role_attributes is not None:
        body["roleAttributes"] = slices(args.role_attributes)
    tags = tags_of(args)
    if tags is not None:
        body["tags"] = tags
    if not body:
        raise CliError("no values changed: give at least one option to update", USAGE)
    check_id = resolve(client, "posture-checks", args.name)
    body["typeId"] = type_id
    response = send(client, "PATCH", f"/posture-checks/{check_id}", body)
    if args.output_json:
        print_json(response)
    return 0


def update_mac(args, client) -> int:
    body = {} if args.mac_addresses is None else {"macAddresses": slices(args.mac_addresses)}
    return _patch(args, client, "MAC", body)


def update_domain(args, client) -> int:
    body = {}
    if args.domains is not None:
        names = slices(args.domains)
        if not names:
            raise CliError("--domains needs one or more domain names (comma-separated or repeated)", USAGE)
        body["domains"] = names
    return _patch(args, client, "DOMAIN", body)


def update_os(args, client) -> int:
    body = {} if args.os is None else {"operatingSystems": os_specs(slices(args.os))}
    return _patch(args, client, "OS", body)


def update_mfa(args, client) -> int:
    body = {}
    if args.seconds is not None:
        body["timeoutSeconds"] = args.seconds
    for key, on, off in (
        ("promptOnWake", args.wake, args.no_wake),
        ("promptOnUnlock", args.unlock, args.no_unlock),
        ("ignoreLegacyEndpoints", args.ignore_legacy, args.no_ignore_legacy),
    ):
        if on is not None:
            body[key] = on
        if off is not None:
            body[key] = False
    return _patch(args, client, "MFA", body)


def update_process(args, client) -> int:
    change = {}
    if args.path is not None:
        change["path"] = args.path
    if args.hash_sigs is not None:
        change["hashes"] = sha512s(slices(args.hash_sigs))
    if args.signer_fingerprint is not None:
        change["signerFingerprint"] = sha1(args.signer_fingerprint)
    if args.os is not None:
        change["osType"] = os_name(args.os, process=True)
    body = {}
    if change:  # the controller keeps a process whole: send the current one with the changes applied
        check_id = resolve(client, "posture-checks", args.name)
        current = client.mgmt_ok("GET", f"/posture-checks/{check_id}")
        if current.get("typeId") != "PROCESS":
            raise CliError(f"posture check {args.name} is a {current.get('typeId')} check, not a PROCESS check", USAGE)
        body["process"] = {**(current.get("process") or {}), **change}
    return _patch(args, client, "PROCESS", body)


# -- the parsers -------------------------------------------------------------------


def _attrs(p, what: str = "the posture check") -> None:
    p.add_argument(
        "-a", "--role-attributes", action="append", default=None, help=f"comma-separated role attributes of {what}"
    )


def register_create(sub, entity) -> None:
    """``create posture-check TYPE``; ``entity`` is ``edge._entity`` (common flags, tags, the saved client)."""
    group = sub.add_parser(
        "posture-check", help="creates a posture check (mac, domain, os, mfa, process, process-multi)"
    )
    types = group.add_subparsers(dest="posture_type", required=True, metavar="TYPE")

    p = entity(types, "mac", create_mac, "creates a posture check for MAC addresses")
    _attrs(p)
    p.add_argument("-m", "--mac-addresses", action="append", default=None, help="MAC addresses of the posture check")

    p = entity(types, "domain", create_domain, "creates a posture check for Windows domains")
    _attrs(p)
    p.add_argument("-d", "--domains", action="append", default=None, help="domains (comma-separated or repeated)")

    p = entity(types, "os", create_os, "creates a posture check for specific operating systems")
    _attrs(p)
    p.add_argument("-o", "--os", action="append", default=None, help="'<os>:<version>:<version>...', several allowed")

    p = entity(types, "mfa", create_mfa, "creates a posture check indicating client-side mfa is required")
    _attrs(p)
    p.add_argument("-s", "--seconds", type=int, default=-1, help="seconds before another MFA code is needed")
    bool_flag(p, "-w", "--wake", dest="wake", help="prompt for MFA code on endpoint wake")
    bool_flag(p, "-u", "--unlock", dest="unlock", help="prompt for MFA code on endpoint unlock")
    bool_flag(p, "--ignore-legacy", dest="ignore_legacy", help="ignore prompts and timeout for legacy endpoints")

    p = entity(
        types,
        "process",
        create_process,
        "creates a posture check for an OS specific process",
        positionals=("name", "os", "path"),
    )
    _attrs(p)
    p.add_argument("-s", "--hash-sigs", action="append", default=None, help="sha512 hashes of valid binaries")
    p.add_argument("-f", "--signer-fingerprint", default=None, help="the sha1 hash of a signer certificate")

    p = entity(
        types,
        "process-multi",
        create_process_multi,
        "creates a posture check requiring multiple executables and OSes",
        positionals=("name", "semantic", "oses", "paths"),
    )
    _attrs(p)
    p.add_argument("-s", "--hash-sigs", action="append", default=None, help="hashes: '|' within, ',' between processes")
    p.add_argument("-f", "--signer-fingerprints", action="append", default=None, help="sha1s, '|' within, ','")


def register_update(sub, entity) -> None:
    """``update posture-check TYPE ID|NAME``."""
    group = sub.add_parser("posture-check", help="updates a posture check (mac, domain, os, mfa, process)")
    types = group.add_subparsers(dest="posture_type", required=True, metavar="TYPE")

    def check(name, func, help):
        p = entity(types, name, func, help)
        p.add_argument("-n", "--name", dest="new_name", default=None, help="Set the name")
        p.add_argument("-a", "--role-attributes", action="append", default=None, help="Set role attributes ('' unsets)")
        return p

    p = check("mac", update_mac, "updates a MAC posture check")
    p.add_argument("-m", "--mac-addresses", action="append", default=None, help="Set MAC addresses")

    p = check("domain", update_domain, "updates a domain posture check")
    p.add_argument("-d", "--domains", action="append", default=None, help="Set the domains")

    p = check("os", update_os, "updates an OS posture check")
    p.add_argument("-o", "--os", action="append", default=None, help="Set OSes, '<os>:<version>:<version>...'")

    p = check("mfa", update_mfa, "updates an MFA posture check")
    p.add_argument("-s", "--seconds", type=int, default=None, help="seconds before another MFA code is needed")
    bool_flag(p, "-w", "--wake", dest="wake", help="prompt for MFA code on endpoint wake")
    bool_flag(p, "-z", "--no-wake", dest="no_wake", help="do not prompt for MFA code on endpoint wake")
    bool_flag(p, "-u", "--unlock", dest="unlock", help="prompt for MFA code on endpoint unlock")
    bool_flag(p, "-q", "--no-unlock", dest="no_unlock", help="do not prompt for MFA code on endpoint unlock")
    bool_flag(p, "--ignore-legacy", dest="ignore_legacy", help="ignore prompts and timeout for legacy endpoints")
    bool_flag(p, "-l", "--no-ignore-legacy", dest="no_ignore_legacy", help="do not ignore them")

    p = check("process", update_process, "updates a process posture check")
    p.add_argument("-p", "--path", default=None, help="set the path of the process")
    p.add_argument("-s", "--hash-sigs", action="append", default=None, help="set the valid sha512 hashes")
    p.add_argument("-f", "--signer-fingerprint", default=None, help="set the signer fingerprint (sha1)")
    p.add_argument("-o", "--os", default=None, help="set the OS of the process")
