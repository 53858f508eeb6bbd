"""``ziti edge quickstart ha`` and ``ziti edge quickstart join``: one cluster member (a controller and its router).

As the real HA quickstart: every member shares ``--home`` (the cluster's PKI in
``HOME/pki``), keeps its own folder ``HOME/<instance-id>`` (its store, server
certificate and raft files) and names its router ``router-<instance-id>``. ``ha``
starts a new cluster (the CA is made there); ``join`` adds a member through
``--cluster-member tls:HOST:PORT`` (a member's API address). The same command on the
same home again restarts that member, which catches up from its store and the log.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from controller.console import host_name, port_number
from harness.ziti.common import bool_flag
from harness.ziti.quickstart import RULE, Addresses, _say, serve_member

CA_FILES = ("root-ca.cert.pem", "root-ca.key.pem", "intermediate-ca.cert.pem", "intermediate-ca.key.pem")


def cmd_ha(args) -> int:
    return _member(args, join=None)


def cmd_join(args) -> int:
    from controller.console import USAGE, CliError

    if not args.cluster_member:
        raise CliError("--cluster-member is required", USAGE)
    return _member(args, join=args.cluster_member)


def _member(args, join: str | None) -> int:
    from controller.console import USAGE, CliError

    if not args.home:
        raise CliError("--home is required in ha mode: every member of the cluster shares it", USAGE)
    home = Path(os.path.expanduser(args.home))
    print(f"permanent --home '{home}' will not be removed on exit", flush=True)
    home.mkdir(parents=True, exist_ok=True)
    os.umask(0o077)  # the member's folder and the CA files copied into it: owner-only
    instance_id = args.instance_id or "instance-1"
    folder = home / instance_id
    shared = home / "pki"
    if join is not None and not (shared / "root-ca.key.pem").exists():
        raise CliError(
            f"no cluster PKI in {shared}: start the first member with `ziti edge quickstart ha` there", USAGE
        )
    if (shared / "root-ca.key.pem").exists():  # the cluster's CA: this member's server certificate chains to it
        (folder / "pki").mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in CA_FILES:
            if not (folder / "pki" / name).exists():
                shutil.copy2(shared / name, folder / "pki" / name)
    try:
        return _run(args, home, folder, instance_id, join)
    finally:
        _say(f"Environment left intact at: {home}")


def _run(args, home: Path, folder: Path, instance_id: str, join: str | None) -> int:
    from controller.cluster.join import admin_join_request
    from controller.cluster.member import ClusterConfig, raft_address_of, raft_port_for
    from controller.config import Config

    at = Addresses.of(args)
    trust_domain = args.trust_domain or "quickstart"
    cluster = ClusterConfig(
        instance_id=instance_id,
        raft_address=f"{at.bind}:{raft_port_for(at.ctrl_port)}",
        api_address=f"tls:{at.address}:{at.ctrl_port}",
    )
    shared = home / "pki"
    if join is not None:
        cluster.join = [raft_address_of(join)]
        cluster.ask_to_join = admin_join_request([join], shared / "root-ca.cert.pem", at.username, at.password)
    config = Config(
        data_dir=folder,
        host=at.bind,
        api_address=f"{at.address}:{at.ctrl_port}",
        hostnames=at.hostnames,
        admin_username=at.username,
        admin_password=at.password,
        trust_domain=trust_domain,
        ctrl_address=f"tls:{at.address}:{at.router_ctrl_port}",
        cluster=cluster,
    )

    def share_the_ca() -> None:
        if not (shared / "root-ca.key.pem").exists():  # the first member: its CA becomes the cluster's
            shared.mkdir(parents=True, exist_ok=True, mode=0o700)
            for name in CA_FILES:
                shutil.copy2(folder / "pki" / name, shared / name)

    banner = (
        RULE,
        "Quickly add another member to this cluster using: ",
        "  ziti edge quickstart join \\",
        f"    --ctrl-port {at.ctrl_port + 1} \\",
        f"    --router-port {(at.router_port or args.router_port) + 1} \\",
        f'    --home "{home}" \\',
        f'    --trust-domain="{trust_domain}" \\',
        f"    --cluster-member tls:{at.address}:{at.ctrl_port} \\",
        f'    --instance-id "{_next_instance_id(instance_id)}"',
    )
    return serve_member(
        args,
        home,
        at,
        config,
        ca_file=shared / "root-ca.cert.pem",
        saved=lambda path: print(f"Saving identity to {path}", flush=True),
        prepare=share_the_ca,
        banner=banner,
    )


def _next_instance_id(instance_id: str) -> str:
    """``inst1`` -> ``inst2``, ``instance-9`` -> ``instance-10``; without a number, ``-2`` is added."""
    head = instance_id.rstrip("0123456789")
    digits = instance_id[len(head) :]
    return f"{head}{int(digits) + 1}" if digits else f"{instance_id}-2"


def register(quickstart_parser) -> None:
    """``ha`` and ``join`` under ``ziti edge quickstart`` (which alone still runs a single controller)."""
    sub = quickstart_parser.add_subparsers(dest="quickstart_mode", required=False, metavar="MODE")
    for name, func, help_text in (
        ("ha", cmd_ha, "runs a Controller and Router in quickstart mode, as the first member of a cluster"),
        ("join", cmd_join, "runs a Controller and Router in quickstart mode and joins an existing cluster"),
    ):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("-u", "--username", default=None, help="admin username, default: admin")
        p.add_argument("-p", "--password", default=None, help="admin password, default: admin")
        p.add_argument("--home", default=None, help="permanent directory, shared by every member (required)")
        p.add_argument(
            "--ctrl-address", type=host_name, default=None, help="the advertised address of the API (default 127.0.0.1)"
        )
        p.add_argument("--ctrl-port", type=port_number, default=1280, help="the port of the API (default 1280)")
        p.add_argument("--router-address", type=host_name, default=None, help="the advertised address of the router")
        p.add_argument("--router-port", type=port_number, default=3022, help="the port of the router (default 3022)")
        bool_flag(p, "--no-router", dest="no_router", help="specifies the quickstart should not start a router")
        bool_flag(p, "--configure-and-exit", dest="configure_and_exit", help="Configures everything and then exits")
        p.add_argument("--trust-domain", default=None, help="the specified trust domain to be used in SPIFFE ids")
        p.add_argument("--instance-id", default=None, help="specifies a unique instance id for use in ha mode")
        bool_flag(p, "--verbose", dest="verbose", help="Show additional output.")
        p.add_argument("-i", "--cli-identity", default=None, help="the saved login to write (default: default)")
        if name == "join":
            p.add_argument(
                "-m",
                "--cluster-member",
                default=None,
                help="address of a cluster member. required. example tls:localhost:1280",
            )
        p.set_defaults(func=func)
