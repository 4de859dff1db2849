"""Benches of readings that were measured and left out: the candidate priors, a follow-up term
for bursts, older copies counting for less, where the posterior and Cho–Garcia-Molina part
ways in Evaluation 2, and the nightly refresh on a model of the collection (``refresh_model``:
what a budget can hold at best). ``docs/readings.md`` gives their figures and why HACS does not
use them; they stay runnable to repeat those figures::

    .venv/bin/python -m bench.experiments.NAME [options]
"""
