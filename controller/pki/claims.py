"""A third-party CA's ``externalIdClaim``: where in a certificate an identity's externalId lives.

A claim names a location (the subject CN, the SAN URIs or the SAN e-mails), a
matcher selecting values there (ALL, PREFIX, SUFFIX; SCHEME for URIs), a parser
(NONE, or SPLIT on a separator) and the index of the wanted value among all
parsed values. The rules mirror the real controller's, so a configuration it
would refuse is refused here at create/update time.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from cryptography import x509
from cryptography.x509.oid import NameOID

from controller.errors import FieldError

LOCATIONS = ("COMMON_NAME", "SAN_URI", "SAN_EMAIL")
MATCHERS = ("ALL", "PREFIX", "SUFFIX", "SCHEME")
PARSERS = ("NONE", "SPLIT")
#: matchers allowed per location
_MATCHERS_AT = {
    "COMMON_NAME": ("ALL", "PREFIX", "SUFFIX"),
    "SAN_EMAIL": ("ALL", "PREFIX", "SUFFIX"),
    "SAN_URI": ("ALL", "SCHEME"),
}
#: record keys (snake_case) of a stored claim
KEYS = ("location", "matcher", "matcher_criteria", "parser", "parser_criteria", "index")


class ClaimNotFound(ValueError):
    """The certificate does not carry the configured claim."""


def is_configured(claim: dict | None) -> bool:
    """A claim without a location is unconfigured (treated as no claim, like the real one)."""
    return bool(claim and claim.get("location"))


def validate(claim: dict | None) -> None:
    """Raise ``FieldError`` for a claim that could never be extracted."""
    if not is_configured(claim):
        return
    index = claim.get("index") or 0
    if index < 0:
        raise FieldError("externalIdClaim.index", "index must be greater than or equal to zero", index)
    location = claim["location"]
    if location not in LOCATIONS:
        raise FieldError("externalIdClaim.location", f"unsupported location [{location}]", location)
    problem = _problem(claim)
    if problem:
        value = f"location={location} matcher={claim.get('matcher')} parser={claim.get('parser')}"
        raise FieldError("externalIdClaim", problem, value)


def _problem(claim: dict) -> str | None:
    location, matcher, parser = claim["location"], claim.get("matcher"), claim.get("parser")
    if matcher not in _MATCHERS_AT[location]:
        return f"unsupported matcher [{matcher}] for location [{location}]"
    if matcher != "ALL" and not claim.get("matcher_criteria"):
        return f"invalid criteria [{claim.get('matcher_criteria') or ''}] for matcher [{matcher}]"
    if parser not in PARSERS:
        return f"unsupported parser [{parser}] for location [{location}]"
    if parser == "SPLIT" and not claim.get("parser_criteria"):
        return f"invalid criteria [{claim.get('parser_criteria') or ''}] for parser [{parser}]"
    return None


def external_id(claim: dict | None, cert: x509.Certificate) -> str | None:
    """The externalId a certificate carries under ``claim``; None when no claim is configured.

    Raises ClaimNotFound when the claim is configured but absent or empty.
    """
    if not is_configured(claim):
        return None
    if _problem(claim):
        raise ClaimNotFound("the claim configuration is invalid")
    values = []
    for located in _located(claim["location"], cert):
        if _matches(claim, located):
            values.extend(_parse(claim, located))
    index = claim.get("index") or 0
    if index < 0 or index >= len(values):
        raise ClaimNotFound("no claim found")
    if values[index] == "":
        raise ClaimNotFound("claim resolved to an empty value")
    return values[index]


def _located(location: str, cert: x509.Certificate) -> list[str]:
    if location == "COMMON_NAME":
        return [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)][:1]
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    kind = x509.UniformResourceIdentifier if location == "SAN_URI" else x509.RFC822Name
    return list(sans.get_values_for_type(kind))


def _matches(claim: dict, value: str) -> bool:
    matcher, criteria = claim.get("matcher"), claim.get("matcher_criteria") or ""
    if matcher == "ALL":
        return True
    if matcher == "PREFIX":
        return value.startswith(criteria)
    if matcher == "SUFFIX":
        return value.endswith(criteria)
    if matcher == "SCHEME":
        return urlsplit(value).scheme.lower() == criteria.lower()
    return False


def _parse(claim: dict, value: str) -> list[str]:
    if claim.get("parser") == "SPLIT":
        return value.split(claim.get("parser_criteria") or "")
    return [value]


def to_record(wire: dict | None) -> dict | None:
    """Wire ``externalIdClaim`` -> record (snake_case, every key present)."""
    if wire is None:
        return None
    return {
        "location": wire.get("location"),
        "matcher": wire.get("matcher"),
        "matcher_criteria": wire.get("matcherCriteria") or "",
        "parser": wire.get("parser"),
        "parser_criteria": wire.get("parserCriteria") or "",
        "index": wire.get("index") or 0,
    }


def to_wire(record: dict | None) -> dict | None:
    if record is None:
        return None
    return {
        "location": record.get("location"),
        "matcher": record.get("matcher"),
        "matcherCriteria": record.get("matcher_criteria") or "",
        "parser": record.get("parser"),
        "parserCriteria": record.get("parser_criteria") or "",
        "index": record.get("index") or 0,
    }


def merge_patch(stored: dict | None, wire: dict) -> dict:
    """PATCH: the supplied (non-null) subfields overlaid on the stored claim."""
    merged = dict(stored or {k: ("" if k.endswith("criteria") else 0 if k == "index" else None) for k in KEYS})
    for wire_key, key in (
        ("location", "location"),
        ("matcher", "matcher"),
        ("matcherCriteria", "matcher_criteria"),
        ("parser", "parser"),
        ("parserCriteria", "parser_criteria"),
        ("index", "index"),
    ):
        if wire.get(wire_key) is not None:
            merged[key] = wire[wire_key]
    return merged
