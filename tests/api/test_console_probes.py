"""What the Admin Console 4.5.1 probes at login answers as a real controller without a cluster does (issue 31).

After logging in, the console asks ``/fabric/v1/cluster/list-members`` (and, when that fails,
``/fabric/v1/raft/members``) whether the controller is one of an HA cluster. A real v2.0.3 controller that is
not clustered answers the first 400 ``SERVER_NOT_RUNNING_IN_HA_MODE`` (admins only), and knows no second path.
"""

from __future__ import annotations

from tests.support import assert_error

FABRIC = "/fabric/v1"


def test_list_members_says_the_controller_is_not_clustered(ziti_admin):
    error = assert_error(
        ziti_admin.request("GET", FABRIC + "/cluster/list-members"), 400, "SERVER_NOT_RUNNING_IN_HA_MODE"
    )
    assert error["message"] == "The server is not running in HA mode. HA operations are not permitted"


def test_list_members_is_for_admins_only(ziti):
    assert_error(ziti.request("GET", FABRIC + "/cluster/list-members"), 401, "UNAUTHORIZED")


def test_the_raft_members_path_is_not_a_real_one(ziti_admin):
    assert_error(ziti_admin.request("GET", FABRIC + "/raft/members"), 404, "NOT_FOUND")
