"""The generic mapper: a record rendered from its manager's declaration alone."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from controller.api.mappers.entity import generic, render
from controller.model.base import Attr, EntityManager


class Widget(EntityManager):
    """A declaration only (never constructed): what ``render`` reads."""

    collection = "widgets"
    link_names = ("parts",)
    attrs = (
        Attr("name"),
        Attr("secretHash", public=False),
        Attr("hostId", omit_none=True),
        Attr("roleAttributes", default=list),
    )


RECORD = {
    "id": "w1",
    "created_at": "2026-01-01T00:00:00.000Z",
    "updated_at": "2026-01-02T00:00:00.000Z",
    "tags": {"team": "a"},
    "name": "one",
    "secret_hash": "s3cr3t",
    "host_id": None,
    "role_attributes": ["x"],
}


def test_generic_view_renders_common_fields_links_and_public_attributes_in_order():
    out = generic(Widget)(RECORD)
    assert list(out) == ["_links", "createdAt", "id", "tags", "updatedAt", "name", "roleAttributes"]
    assert out["_links"] == {"self": {"href": "./widgets/w1"}, "parts": {"href": "./widgets/w1/parts"}}
    assert out["tags"] == {"team": "a"} and out["name"] == "one" and out["roleAttributes"] == ["x"]


def test_secrets_never_render_and_omitempty_fields_appear_once_set():
    assert "secretHash" not in render(Widget, RECORD)
    assert render(Widget, {**RECORD, "host_id": "h1"})["hostId"] == "h1"


@given(
    host_id=st.none() | st.text(max_size=5),
    tags=st.none() | st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
def test_rendered_keys_follow_the_declaration(host_id, tags):
    out = render(Widget, {**RECORD, "host_id": host_id, "tags": tags})
    assert ("hostId" in out) is (host_id is not None)
    assert out["tags"] == (tags or {})
    assert "secretHash" not in out and out["id"] == "w1"
