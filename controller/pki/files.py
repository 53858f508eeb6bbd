"""On-disk storage of the controller PKI: atomic writes, 0600 keys, a folder lock."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

try:
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None

LOCK_NAME = ".pki.lock"


def _atomic_write(path: Path, data: bytes, mode: int) -> None:
    """Write via a temp file in the same folder, then rename over ``path``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_key(path: Path, key) -> None:
    """APPSEC(key-perms): private keys are created 0600 and never world-readable, even briefly."""
    data = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    _atomic_write(path, data, 0o600)


def write_cert(path: Path, cert: x509.Certificate) -> None:
    # APPSEC(secrets-at-rest): the data folder is owner-only throughout, certificates included
    _atomic_write(path, cert.public_bytes(serialization.Encoding.PEM), 0o600)


class DamagedFile(ValueError):
    """A PKI file that cannot be read as what it should hold; names the file."""

    def __init__(self, path: Path, reason: str):
        self.path, self.reason = Path(path), reason
        super().__init__(f"{path}: {reason}")


def _parse(path: Path, what: str, parse):
    data = path.read_bytes()
    try:
        return parse(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as ex:
        raise DamagedFile(path, f"not a PEM {what}: {ex}") from ex


def read_key(path: Path):
    return _parse(path, "private key", lambda data: serialization.load_pem_private_key(data, password=None))


def read_cert(path: Path) -> x509.Certificate:
    return _parse(path, "certificate", x509.load_pem_x509_certificate)


def key_matches(cert: x509.Certificate, key) -> bool:
    """True when ``key`` is the private half of ``cert``'s public key."""
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return cert.public_key().public_bytes(*fmt) == key.public_key().public_bytes(*fmt)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """Serialise PKI creation between processes sharing ``folder``."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
