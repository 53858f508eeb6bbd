"""The primary authentication methods, declared once: ``/authenticate?method=`` and the registry both read it."""

from __future__ import annotations

from controller.auth.cert import CertMethod
from controller.auth.ext_jwt import ExtJwtMethod
from controller.auth.methods import PasswordMethod

#: every primary method, in documentation order: adding one is its module and a line here
METHODS = (PasswordMethod, CertMethod, ExtJwtMethod)
METHOD_NAMES = tuple(method.name for method in METHODS)
