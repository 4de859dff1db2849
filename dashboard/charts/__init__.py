"""Plotly figures for HACS pages, built from plain lists, in one style — pure (stdlib only).

* ``dashboard.charts.style`` — the font, the colour-blind-safe palette, model colours and labels,
  and the axis and layout helpers every figure is built from;
* ``dashboard.charts.site`` — a site's timeline and probability curves, and the histogram of update
  intervals (re-exported here: ``from dashboard import charts; charts.timeline_figure(...)``);
* ``dashboard.charts.evaluation`` — the Evaluation page's figures and its Table I view;
* ``dashboard.charts.learned`` — the Evaluation page's sections on learned schedulers (re-exported
  by ``dashboard.charts.evaluation``);
* ``dashboard.charts.legend`` — what each model of the Evaluation page's ranking charts is, in one
  line and with its formula and sources.

Every string from an archive, a seed list or stored results enters a figure through
``dashboard.charts.style.plain_text``: Plotly reads hover text, names and titles as markup.
"""

# The site page's figures are the package's own names (``dashboard.charts.site.__all__``).
from dashboard.charts.site import *  # noqa: F403
from dashboard.charts.site import __all__ as __all__
