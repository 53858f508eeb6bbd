"""The table renderer and the cobra-style flag spellings of the ``ziti`` drop-in (in-process, inputs varied)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from harness.ziti import table
from harness.ziti.common import BOOL_FLAGS, normalize_bools

text = st.text(st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="│"), max_size=12)


@given(headers=st.lists(text.filter(lambda t: t.strip() == t and t), min_size=1, max_size=5), data=st.data())
def test_every_line_is_as_wide_and_every_cell_comes_back(headers, data):
    rows = data.draw(
        st.lists(
            st.lists(text.filter(lambda t: t.strip() == t), min_size=len(headers), max_size=len(headers)), max_size=4
        )
    )
    rendered = table.render(headers, rows)
    lines = rendered.splitlines()
    assert len({len(line) for line in lines}) == 1
    assert lines[0][0] == "╭" and lines[2][0] == "├" and lines[-1][0] == "╰"
    assert [c.strip() for c in lines[1].strip("│").split("│")] == [h.upper() for h in headers]
    assert [[c.strip() for c in line.strip("│").split("│")] for line in lines[3:-1]] == rows


def test_a_multi_line_cell_takes_several_lines_and_values_print_as_the_real_one():
    rendered = table.render(["Name", "Attributes", "Online", "Cost"], [["r1", "a\nb", True, 0.0]])
    assert rendered.splitlines()[3:5] == [
        "│ r1   │ a          │ true   │ 0    │",
        "│      │ b          │        │      │",
    ]


def test_paging_line():
    assert table.paging_line({"pagination": {"offset": 0, "limit": 10, "totalCount": 0}}, 0) == "results: none"
    assert (
        table.paging_line({"pagination": {"offset": 10, "limit": 10, "totalCount": 25}}, 10) == "results: 11-20 of 25"
    )


def test_bool_flags_take_cobra_values():
    import harness.ziti as ziti

    ziti.parser()  # registers the flags
    assert "--enroll-to-cert" in BOOL_FLAGS
    assert normalize_bools(["--enroll-to-cert=true", "--enroll-to-token=false", "--name=false"]) == [
        "--enroll-to-cert",
        "--enroll-to-token=false",
        "--name=false",
    ]
    args = ziti.parser().parse_args(
        normalize_bools(["edge", "update", "ext-jwt-signer", "s", "--enroll-to-cert=true", "--enroll-to-token=false"])
    )
    assert args.enroll_to_cert is True and args.enroll_to_token is False
