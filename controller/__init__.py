"""A Python edge controller wire-compatible with the OpenZiti Edge APIs."""
