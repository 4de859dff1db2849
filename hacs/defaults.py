"""The method's defaults (DESIGN rules 8 and 9), in one place for settings, forms and commands.

Kept apart from the numerical modules so that reading the settings loads no NumPy or SciPy.
"""

HISTORY_DAYS = 3 * 365  # rule 8: a crawl list's history window w, three years
# Rule 8: a crawl list's horizon e. A daily list is crawled before the next one is built, so
# it ranks by the chance of a change by tomorrow; a week (the paper's e, which the evaluation
# keeps, rule 9) ranks sites crawled yesterday by changes no crawl today can find
# (docs/readings.md: closed-loop replay, e = 7 days against 1).
E_DAYS = 1.0
# The longest history window, in weeks, that an evaluation or a learned scheduler accepts.
MAX_W_WEEKS = 52
