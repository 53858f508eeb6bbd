"""``ziti edge create|update posture-check TYPE`` as subprocesses, each round-tripped through the controller:
the real command's subcommands and flags, its cleaning of values (MAC addresses and hashes to lower-case hex,
OS names to the API's spelling), its output (the id alone, or ``New posture check ...`` for ``process``),
and an update that changes only what was given."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harness.ziti import posture
from tests.ziti.test_commands import one_error

SHA512 = "AB" * 64
SHA1 = "12:34:56:78:9A:BC:DE:F0:12:34:56:78:9A:BC:DE:F0:12:34:56:78"


def check(ziti, name: str) -> dict:
    found = json.loads(ziti.edge("list", "posture-checks", f'name = "{name}"', "-j"))["data"]
    assert len(found) == 1, found
    return found[0]


def test_mac_and_domain_checks_are_created_cleaned_and_updated(ziti, quickstart):
    out = ziti.edge("create", "posture-check", "mac", "pc-mac", "-m", "AA:BB:CC:DD:EE:FF,aa-bb-cc-dd-ee-ff", "-a", "lt")
    created = check(ziti, "pc-mac")
    assert out.strip() == created["id"]
    assert created["typeId"] == "MAC" and created["macAddresses"] == ["aabbccddeeff"]
    assert created["roleAttributes"] == ["lt"]

    ziti.edge("update", "posture-check", "mac", "pc-mac", "-m", "112233445566", "-n", "pc-mac-2")
    updated = check(ziti, "pc-mac-2")
    assert updated["id"] == created["id"] and updated["macAddresses"] == ["112233445566"]
    assert updated["roleAttributes"] == ["lt"]  # untouched
    ziti.edge("update", "posture-check", "mac", "pc-mac-2", "-a", "")
    assert check(ziti, "pc-mac-2")["roleAttributes"] == []

    ziti.edge("create", "posture-check", "domain", "pc-dom", "-d", "Corp.Example, corp.example", "-d", "b.example")
    assert check(ziti, "pc-dom")["domains"] == ["corp.example", "b.example"]
    ziti.edge("update", "posture-check", "domain", "pc-dom", "-d", "other.example", "-a", "windows")
    after = check(ziti, "pc-dom")
    assert after["domains"] == ["other.example"] and after["roleAttributes"] == ["windows"]


def test_os_and_mfa_checks(ziti, quickstart):
    ziti.edge("create", "posture-check", "os", "pc-os", "-o", "windows:10.0.19041,linux")
    assert check(ziti, "pc-os")["operatingSystems"] == [
        {"type": "Windows", "versions": ["10.0.19041"]},
        {"type": "Linux", "versions": []},
    ]
    ziti.edge("update", "posture-check", "os", "pc-os", "-o", "MACOS:13.0.0")
    assert check(ziti, "pc-os")["operatingSystems"] == [{"type": "macOS", "versions": ["13.0.0"]}]

    ziti.edge("create", "posture-check", "mfa", "pc-mfa", "-s", "300", "-w")
    made = check(ziti, "pc-mfa")
    assert (made["timeoutSeconds"], made["promptOnWake"], made["promptOnUnlock"]) == (300, True, False)
    ziti.edge("update", "posture-check", "mfa", "pc-mfa", "--no-wake", "-u", "-s", "600", "--ignore-legacy")
    after = check(ziti, "pc-mfa")
    assert (after["timeoutSeconds"], after["promptOnWake"], after["promptOnUnlock"]) == (600, False, True)
    assert after["ignoreLegacyEndpoints"] is True
    ziti.edge("update", "posture-check", "mfa", "pc-mfa", "-l", "--unlock=false")
    after = check(ziti, "pc-mfa")
    assert after["ignoreLegacyEndpoints"] is False and after["promptOnUnlock"] is False
    assert after["timeoutSeconds"] == 600


def test_process_and_process_multi_checks(ziti, quickstart):
    out = ziti.edge(
        "create", "posture-check", "process", "pc-proc", "linux", "/usr/bin/agent", "-s", SHA512, "-f", SHA1
    )
    made = check(ziti, "pc-proc")
    assert out.strip() == f"New posture check pc-proc created with id: {made['id']}"
    assert made["process"]["osType"] == "Linux" and made["process"]["path"] == "/usr/bin/agent"
    assert made["process"]["hashes"] == ["ab" * 64]
    assert made["process"]["signerFingerprint"] == "123456789abcdef0123456789abcdef012345678"

    ziti.edge("update", "posture-check", "process", "pc-proc", "--path", "/opt/agent")
    after = check(ziti, "pc-proc")["process"]
    assert after["path"] == "/opt/agent" and after["osType"] == "Linux" and after["hashes"] == ["ab" * 64]
    ziti.edge("update", "posture-check", "process", "pc-proc", "-o", "windows")
    assert check(ziti, "pc-proc")["process"]["osType"] == "Windows"

    out = ziti.edge(
        "create", "posture-check", "process-multi", "pc-multi", "AnyOf", "linux,windows", "/a,C:\\b.exe",
        "-s", f"{SHA512}|{'cd' * 64},{'ef' * 64}", "-f", SHA1,
    )  # fmt: skip
    multi = check(ziti, "pc-multi")
    assert out.strip() == multi["id"] and multi["typeId"] == "PROCESS_MULTI" and multi["semantic"] == "AnyOf"
    first, second = multi["processes"]
    assert (first["osType"], first["path"], first["hashes"]) == ("Linux", "/a", ["ab" * 64, "cd" * 64])
    assert first["signerFingerprints"] == ["123456789abcdef0123456789abcdef012345678"]
    assert (second["osType"], second["path"], second["hashes"]) == ("Windows", "C:\\b.exe", ["ef" * 64])


def test_posture_check_errors(ziti, quickstart):
    done = ziti("edge", "create", "posture-check", "mac", "pc-no-mac")
    assert done.returncode == 2 and "at least one MAC address" in one_error(done)
    done = ziti("edge", "create", "posture-check", "mac", "pc-bad-mac", "-m", "zz:zz")
    assert done.returncode == 2 and "12-17 hex characters" in one_error(done)
    done = ziti("edge", "create", "posture-check", "process", "pc-phone", "android", "/x")
    assert (
        done.returncode == 2
        and one_error(done) == "error: invalid os type [android]: expected Linux|macOS|Windows|WindowsServer"
    )
    done = ziti("edge", "create", "posture-check", "process-multi", "pc-m", "AllOf", "linux,linux", "/only-one")
    assert done.returncode == 2 and "number of paths" in one_error(done)
    done = ziti("edge", "create", "posture-check", "process", "pc-short", "linux", "/x", "-s", "abc")
    assert done.returncode == 2 and "128 hex characters" in one_error(done)
    ziti.edge("create", "posture-check", "domain", "pc-err", "-d", "x.example")
    done = ziti("edge", "update", "posture-check", "domain", "pc-err")
    assert done.returncode == 2 and "no values changed" in one_error(done)
    done = ziti("edge", "update", "posture-check", "mac", "pc-err", "-m", "112233445566")
    assert done.returncode == 1 and "type of a posture check can not be changed" in one_error(done)
    assert check(ziti, "pc-err")["domains"] == ["x.example"]
    done = ziti("edge", "update", "posture-check", "process", "pc-err", "--path", "/x")
    assert done.returncode == 2 and "not a PROCESS check" in one_error(done)
    done = ziti("edge", "update", "posture-check", "mac", "no-such-check", "-m", "112233445566")
    assert done.returncode == 1 and one_error(done) == "error: no posture-checks found with id or name no-such-check"


@given(st.lists(st.binary(min_size=6, max_size=6), min_size=1, max_size=4), st.sampled_from([":", "-", ""]))
def test_mac_addresses_clean_to_lower_hex_without_duplicates(raw, sep):
    spelled = [sep.join(f"{b:02X}" for b in address) for address in raw]
    cleaned = posture.mac_addresses(spelled + spelled)
    assert cleaned == list(dict.fromkeys(address.hex() for address in raw))


@given(
    st.sampled_from(sorted(posture.OS_NAMES)),
    st.lists(st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,2}", fullmatch=True), max_size=3),
)
def test_os_specs_take_any_spelling_of_an_os(name, versions):
    spelled = "".join(c.upper() if i % 2 else c for i, c in enumerate(name))
    assert posture.os_specs([":".join([spelled, *versions])]) == [
        {"type": posture.OS_NAMES[name], "versions": versions}
    ]
