"""Widgets that leave a picture behind: a static HTML copy displayed with every live widget.

A widget's output in a notebook is only a reference to a model in the kernel:
exported to HTML, reopened later or rendered on GitHub, it shows nothing (or
"model not found"). So :class:`StaticView` displays two outputs: a static HTML
copy of the widget's state, kept up to date as the widget changes, and the
live widget, which carries a style rule that hides the copy wherever the live
widget renders. A user with a kernel sees the widget once; everyone else sees
the copy.
"""

from __future__ import annotations

import html
import uuid
from typing import Any, Iterable


class StaticView:
    """Mixin for the notebook widgets: ``widget`` is the ipywidgets root, ``static_html()`` its copy."""

    widget: Any
    _handle: Any = None
    _shown_in: int | None = None  # the execution count of the cell that displayed the copy
    _static_class: str = ""

    def static_html(self) -> str:
        raise NotImplementedError

    def _attach_static(self, w) -> None:
        """Add the style rule that hides this view's copy where the live widget renders (call once)."""
        self._static_class = f"ziti-static-{uuid.uuid4().hex[:12]}"
        self.widget.children += (w.HTML(f"<style>.{self._static_class} {{display: none}}</style>"),)

    def static_bundle(self) -> dict:
        """The copy as a display bundle."""
        return {
            "text/html": f"<div class='{self._static_class}'>{self.static_html()}</div>",
            "text/plain": f"<{type(self).__name__}: open with a running kernel for the live widget>",
        }

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._handle = display(self.static_bundle(), raw=True, display_id=True)
        self._shown_in = _execution_count()
        bundle = dict(self.widget._repr_mimebundle_() or {})
        bundle["text/plain"] = ""  # the copy above stands in for the widget where it cannot render
        display(bundle, raw=True)

    def _update_static(self) -> None:
        """Keep the displayed copy in step with the widget while the cell that displayed it runs.

        A later cell that changes the widget leaves the copy alone: each cell's copy shows the
        state that cell left (a saved notebook reads top to bottom as it ran). Clicks in the live
        widget change nothing the copy shows wherever the widget renders, as it is hidden there.
        """
        if self._handle is not None and _execution_count() == self._shown_in:
            self._handle.update(self.static_bundle(), raw=True)


def _execution_count() -> int | None:
    """The number of the cell running now (None outside IPython)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the notebooks extra installs IPython
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None)


def controls_html(lines: Iterable[str]) -> str:
    """The widget's choices as a short monospace block."""
    return "<pre style='color:#1f4e79;margin:2px 0'>" + "\n".join(html.escape(line) for line in lines) + "</pre>"


__all__ = ["StaticView", "controls_html"]
