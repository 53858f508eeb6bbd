"""OIDC authentication as the real controller serves it under ``/oidc``.

Domain only (no HTTP): auth requests and codes (:mod:`.requests`), the login
steps (:mod:`.flow`), the token endpoint's grants (:mod:`.grants`), token
minting and checking (:mod:`.tokens`) and bearer tokens as API sessions
(:mod:`.sessions`). ``controller/api/ops_oidc.py`` serves them.
"""
