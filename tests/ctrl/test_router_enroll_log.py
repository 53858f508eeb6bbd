"""``python -m router enroll`` keeps its one-time token out of its output (issue 32 item 9)."""

from __future__ import annotations

import jwt

from tests.ctrl.support import run_router


def test_enroll_at_info_does_not_log_its_one_time_token(make_router, tmp_path):
    router = make_router(enroll=False)
    token = router.edge_listing()["enrollmentJwt"]
    jwt_file = tmp_path / "router.jwt"
    jwt_file.write_text(token)
    result = run_router("enroll", str(jwt_file), "--data", str(tmp_path / "data"))  # at INFO
    assert result.returncode == 0, result.stderr
    ott = jwt.decode(token, options={"verify_signature": False})["jti"]
    assert ott not in result.stdout + result.stderr
    assert "enrolled edge router" in result.stdout
