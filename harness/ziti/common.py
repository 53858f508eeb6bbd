"""What every ``ziti edge`` command shares: the parser class, flag spellings, name resolution, output."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from controller.console import FAILED, USAGE, CliError

if TYPE_CHECKING:  # httpx is imported by the commands that connect, not by --help or a usage mistake
    from harness.client import ZitiClient

#: bool flags that also take ``--flag=true|false`` (as cobra's); filled by :func:`bool_flag`
BOOL_FLAGS: set[str] = set()


class Parser(argparse.ArgumentParser):
    """argparse, with one line and exit code 2 for a usage mistake."""

    def error(self, message):
        from controller.console import with_suggestion

        print(f"error: {with_suggestion(message)} (see '{self.prog} --help')", file=sys.stderr)
        raise SystemExit(USAGE)


def bool_flag(parser, *names: str, dest: str, default=None, help: str = "") -> None:
    """A cobra-style bool flag: ``--x`` sets it, ``--x=false`` clears it."""
    long = next(n for n in names if n.startswith("--"))
    BOOL_FLAGS.add(long)
    parser.add_argument(*names, dest=dest, action="store_const", const=True, default=default, help=help)
    parser.add_argument(f"--{long[2:]}=false", dest=dest, action="store_const", const=False, help=argparse.SUPPRESS)


def normalize_bools(argv: list[str]) -> list[str]:
    """``--flag=true`` -> ``--flag``; ``--flag=false`` stays (a hidden option of its own)."""
    out = []
    for token in argv:
        name, _, value = token.partition("=")
        if name in BOOL_FLAGS and value.lower() in ("true", "1", "t"):
            out.append(name)
        elif name in BOOL_FLAGS and value.lower() in ("false", "0", "f"):
            out.append(f"{name}=false")
        else:
            out.append(token)
    return out


def add_common(parser) -> None:
    """The flags every real edge command has (``AddCommonFlags``)."""
    parser.add_argument(
        "-j", "--output-json", action="store_true", help="Output the full JSON response from the Ziti Edge Controller"
    )
    parser.add_argument("--output-request-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--timeout", type=int, default=30, help="Timeout for REST operations in seconds (default 30; the real one: 5)"
    )
    parser.add_argument("--verbose", action="store_true", help="Enable verbose logging")
    parser.add_argument("-i", "--cli-identity", default=None, help="Specify the saved identity you want the CLI to use")


def add_tags(parser) -> None:
    parser.add_argument("-t", "--tags", action="append", default=None, help="Add tags to entity definition (k=v)")
    parser.add_argument("--tags-json", default=None, help="Add tags defined in JSON to entity definition")


def tags_of(args) -> dict | None:
    if getattr(args, "tags", None) is None and not getattr(args, "tags_json", None):
        return None
    tags = json.loads(args.tags_json) if args.tags_json else {}
    tags.update(string_map(args.tags))
    return tags


def slices(values: list[str] | None) -> list[str] | None:
    """Repeated and comma-separated values (cobra's StringSlice)."""
    if values is None:
        return None
    return [part for value in values for part in value.split(",") if part != ""]


def string_map(values: list[str] | None) -> dict:
    out = {}
    for part in slices(values) or []:
        key, sep, value = part.partition("=")
        if not sep:
            raise CliError(f"{part!r} is not key=value", USAGE)
        out[key] = value
    return out


def resolve(client: ZitiClient, collection: str, value: str) -> str:
    """The id of the entity named (or with id) ``value``; ``id:``/``name:`` force the reading."""
    if value.startswith("id:"):
        return value[3:]
    if value.startswith("name:"):
        value = value[5:]
    literal = json.dumps(value)
    found = client.mgmt_ok("GET", f"/{collection}", params={"filter": f"id = {literal} or name = {literal}"})
    if not found:
        raise CliError(f"no {collection} found with id or name {value}", FAILED)
    if len(found) > 1:
        raise CliError(f"multiple {collection} found for name {value}, please use id instead", FAILED)
    return found[0]["id"]


def role_ids(client: ZitiClient, roles: list[str] | None, collection: str) -> list[str] | None:
    """``@name`` roles become ``@id`` (as the real command sends them)."""
    if roles is None:
        return None
    return [("@" + resolve(client, collection, role[1:])) if role.startswith("@") else role for role in roles]


def writable(client: ZitiClient) -> ZitiClient:
    """``client``, unless its login is read-only (then the real command's refusal, before any lookup)."""
    if getattr(client, "read_only", False):
        raise CliError("this login is marked read-only, only GET operations are allowed", FAILED)
    return client


def send(client: ZitiClient, method: str, path: str, body=None, *, params=None):
    """A management request; the response (ApiError for a non-2xx answer).

    A login saved read-only (``login --read-only``, or ``--token`` without ``--read-only=false``)
    sends no change, as the real command refuses one."""
    from harness.client import ApiError

    if method != "GET":
        writable(client)
    response = client.mgmt(method, path, json=body, params=params)
    if response.status_code >= 300:
        raise ApiError(response)
    return response


def print_json(response) -> None:
    text = response.text.strip()
    print(text if text else "<empty response body>")
