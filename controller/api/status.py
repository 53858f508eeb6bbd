"""The one place that decides an error's HTTP status: the catalogue's, else the error class's."""

from __future__ import annotations

from controller import errors

#: for codes outside the catalogue (a bare string a caller made up), the status of the error's class
STATUS_BY_CLASS = [
    (errors.InvalidAuth, 401),
    (errors.Unauthorized, 401),
    (errors.NotFound, 404),
    (errors.Forbidden, 403),
    (errors.Conflict, 409),
    (errors.RateLimited, 429),
    (errors.Unavailable, 503),
    (errors.UnsupportedMedia, 415),
    (errors.TooLarge, 413),
    (errors.NotImplementedYet, 501),
    (errors.BadRequest, 400),
]


def status_of(ex: errors.ControllerError) -> int:
    """HTTP status of a domain error: its code's in the catalogue, then its class's, else 500."""
    entry = errors.CATALOGUE.get(ex.code)
    if entry is not None:
        return entry.status
    for cls, status in STATUS_BY_CLASS:
        if isinstance(ex, cls):
            return status
    return 500
