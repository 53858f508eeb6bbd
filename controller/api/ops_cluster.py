"""The fabric API's cluster operations (``/fabric/v1/cluster/...``), as an HA controller serves them.

A single controller answers each with 400 ``SERVER_NOT_RUNNING_IN_HA_MODE``, as the
real one does when it runs without raft.
"""

from __future__ import annotations

from controller import errors
from controller.api.call import Call
from controller.api.dispatch import write_json
from controller.api.operations import FABRIC, Operation
from controller.cluster.member import raft_address_of

APIS = (FABRIC,)

MEMBER_ADD = {
    "type": "object",
    "required": ["address"],
    "properties": {
        "address": {"type": "string", "minLength": 1},
        "isVoter": {"type": "boolean"},
        # this project's own: a member whose raft port is not its API port + 10000 says where it is
        "raftAddress": {"type": "string", "minLength": 3},
    },
}
MEMBER_REMOVE = {"type": "object", "required": ["id"], "properties": {"id": {"type": "string", "minLength": 1}}}
TRANSFER = {"type": "object", "properties": {"newLeaderId": {"type": "string"}}}


def _member_of(cluster):
    if cluster is None:
        raise errors.BadRequest(errors.SERVER_NOT_RUNNING_IN_HA_MODE)
    return cluster


def list_members(call: Call, *, cluster) -> None:
    members = _member_of(cluster).members()
    read_only = not cluster.replicator.has_quorum()
    rows = [
        {
            "address": f"tls:{m['apiAddress']}" if m["apiAddress"] else m["address"],
            "connected": m["isConnected"],
            "id": m["id"],
            "leader": m["isLeader"],
            "readOnly": read_only,
            "version": m["version"],
            "voter": m["isVoter"],
        }
        for m in members
    ]
    write_json(call.resp, {"data": rows})


def add_member(call: Call, *, cluster) -> None:
    address = call.body["address"]
    try:
        raft_address = call.body.get("raftAddress") or raft_address_of(address)
    except ValueError:
        raise errors.FieldError("address", "not an address of the form tls:HOST:PORT", address) from None
    reason = _member_of(cluster).add_member(raft_address)
    if reason is not None:
        raise errors.FieldError("address", f"unable to add cluster member for supplied address: [{reason}]", address)


def remove_member(call: Call, *, cluster) -> None:
    member_id = call.body["id"]
    raft_address = _member_of(cluster).member_address(member_id)
    if raft_address is None or raft_address == cluster.address:
        reason = "no such member" if raft_address is None else "a member cannot remove itself"
        raise errors.FieldError(
            "id", f"unable to remove cluster member node for supplied node id: [{reason}]", member_id
        )
    reason = cluster.remove_member(raft_address)
    if reason is not None:
        raise errors.FieldError(
            "id", f"unable to remove cluster member node for supplied node id: [{reason}]", member_id
        )


def transfer_leadership(call: Call, *, cluster) -> None:
    wanted = (call.body or {}).get("newLeaderId") or None
    raft_address = None
    if wanted is not None:
        raft_address = _member_of(cluster).member_address(wanted)
        if raft_address is None:
            raise errors.ControllerError(errors.TRANSFER_LEADERSHIP_ERROR, cause={"reason": f"no member {wanted}"})
    reason = _member_of(cluster).transfer_leadership(raft_address)
    if reason is not None:
        raise errors.ControllerError(errors.TRANSFER_LEADERSHIP_ERROR, cause={"reason": reason})


def operations() -> list[Operation]:
    tag = "Cluster"
    return [
        Operation(
            "clusterListMembers",
            "GET",
            "/cluster/list-members",
            list_members,
            apis=APIS,
            reply="raw",
            tag=tag,
            summary="List the members of the controller cluster",
        ),
        Operation(
            "clusterMemberAdd",
            "POST",
            "/cluster/add-member",
            add_member,
            apis=APIS,
            body=MEMBER_ADD,
            reply="empty",
            tag=tag,
            summary="Add a controller to the cluster",
        ),
        Operation(
            "clusterMemberRemove",
            "POST",
            "/cluster/remove-member",
            remove_member,
            apis=APIS,
            body=MEMBER_REMOVE,
            reply="empty",
            tag=tag,
            summary="Remove a controller from the cluster",
        ),
        Operation(
            "clusterTransferLeadership",
            "POST",
            "/cluster/transfer-leadership",
            transfer_leadership,
            apis=APIS,
            body=TRANSFER,
            body_optional=True,
            reply="empty",
            tag=tag,
            summary="Make another member the cluster's leader",
        ),
    ]
