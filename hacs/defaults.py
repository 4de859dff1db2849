"""The method's defaults (DESIGN rules 8 and 9), in one place for settings, forms and commands.

Kept apart from the numerical modules so that reading the settings loads no NumPy or SciPy.
"""

HISTORY_DAYS = 3 * 365  # rule 8: a crawl list's history window w, three years
E_DAYS = 7.0  # rules 8 and 9: the horizon e, a week
