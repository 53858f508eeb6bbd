"""The enrollment registry every controller starts with: one method per file."""

from __future__ import annotations

from controller.enroll.ca import CaMethod
from controller.enroll.ott import OttMethod
from controller.enroll.ottca import OttCaMethod
from controller.enroll.registry import EnrollmentMethods
from controller.enroll.router import RouterMethod
from controller.enroll.token import TokenMethod
from controller.enroll.updb import UpdbMethod


def enrollment_methods(ctl) -> EnrollmentMethods:
    """ott, ottca, updb, ca, erott/trott and token, wired to ``ctl``."""
    return EnrollmentMethods(
        ctl, [cls(ctl) for cls in (OttMethod, OttCaMethod, UpdbMethod, CaMethod, RouterMethod, TokenMethod)]
    )
