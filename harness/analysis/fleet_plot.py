"""Per-second figures of a fleet (``harness.dataplane.fleet``) drawn as they arrive, in a notebook.

``LiveFleetPlot().add`` is a fleet's ``on_second`` callback: each second it redraws one figure (polls per
second; poll latency p50 and p99) in place, one display per plot. Outside IPython it only keeps the data.
Runs of several sizes share one plot, each drawn from where the last ended, labelled with its SDK count.
"""

from __future__ import annotations

import time


class LiveFleetPlot:
    """Polls per second and poll latency (p50, p99) per second, redrawn as a fleet runs."""

    def __init__(self, title: str = "fleet: per-second figures", redraw_every: float = 1.0):
        self.title, self.redraw_every = title, redraw_every
        self.points: list[tuple[float, object, str]] = []  # (seconds since the first, Second, label)
        self.label = ""
        self._started: float | None = None
        self._drawn = 0.0
        self._handle = None

    def run(self, label: str) -> "LiveFleetPlot":
        """Label the seconds that follow (e.g. ``"100 SDKs"``)."""
        self.label = label
        return self

    def add(self, second) -> None:
        """A fleet's ``on_second`` callback."""
        now = time.monotonic()
        if self._started is None:
            self._started = now
        self.points.append((now - self._started, second, self.label))
        if now - self._drawn >= self.redraw_every:
            self._drawn = now
            self.show()

    def figure(self):
        from matplotlib.figure import Figure

        figure = Figure(figsize=(9, 4.5))
        polls, latency = figure.subplots(2, 1, sharex=True)
        xs = [x for x, _, _ in self.points]
        polls.plot(xs, [s.polls for _, s, _ in self.points], color="tab:blue")
        polls.set_ylabel("polls / s")
        latency.plot(xs, [s.p50_ms for _, s, _ in self.points], label="p50", color="tab:green")
        latency.plot(xs, [s.p99_ms for _, s, _ in self.points], label="p99", color="tab:red")
        latency.set_ylabel("poll latency (ms)")
        latency.set_xlabel("seconds")
        latency.legend(loc="upper left")
        for index, (x, _, label) in enumerate(self.points):
            if label and (index == 0 or self.points[index - 1][2] != label):
                for axis in (polls, latency):
                    axis.axvline(x, color="grey", linestyle="--", linewidth=0.8)
                polls.annotate(label, (x, 1.0), xycoords=("data", "axes fraction"), va="top", fontsize=8)
        figure.suptitle(self.title)
        return figure

    def show(self) -> None:
        """Draw (the first time) or redraw in place; nothing outside IPython."""
        try:
            from IPython import get_ipython
            from IPython.display import display
        except ImportError:
            return
        if get_ipython() is None:
            return
        figure = self.figure()
        if self._handle is None:
            self._handle = display(figure, display_id=True)
        else:
            self._handle.update(figure)
