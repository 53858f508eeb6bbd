"""Tables as the real ``ziti`` prints them (go-pretty's rounded style, upper-case headers),
followed by the paging line (``results: 1-3 of 3`` or ``results: none``)."""

from __future__ import annotations


def cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render(headers: list[str], rows: list[list], *, right: set[int] = frozenset()) -> str:
    """A rounded table; a cell may hold several lines; the data cells of the ``right`` columns align right."""
    headers = [h.upper() for h in headers]
    body = [[cell(v).split("\n") for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in body:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(len(line) for line in lines))

    def rule(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * (w + 2) for w in widths) + right

    def line(values: list[str], aligned=frozenset()) -> str:
        cells = (f" {v:>{w}} " if at in aligned else f" {v:<{w}} " for at, (v, w) in enumerate(zip(values, widths)))
        return "│" + "│".join(cells) + "│"

    out = [rule("╭", "┬", "╮"), line(headers), rule("├", "┼", "┤")]
    for row in body:
        height = max(len(lines) for lines in row) if row else 1
        for n in range(height):
            out.append(line([lines[n] if n < len(lines) else "" for lines in row], right))
    out.append(rule("╰", "┴", "╯"))
    return "\n".join(out)


def paging_line(meta: dict | None, count: int) -> str:
    page = (meta or {}).get("pagination") or {}
    total = page.get("totalCount", count)
    if not total:
        return "results: none"
    offset = page.get("offset", 0)
    return f"results: {offset + 1}-{offset + count} of {total}"
