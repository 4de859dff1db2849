"""HACS's pure core: the method of the HACS paper and the archive formats it reads.

Nothing here imports Django; every function takes plain values or NumPy arrays, so the method
can be read, tested and benchmarked without a database (``tests/hacs/test_pure.py`` keeps it so).

* ``hacs.clock`` — days since 1970, the reference instant of a date, "today";
* ``hacs.updates`` — DESIGN rules 1, 3 and 4: observations, updates, timelines;
* ``hacs.estimators`` — rules 5–7: the update-rate estimators and the change probability;
* ``hacs.ranking`` — rule 8: the order of a crawl list;
* ``hacs.evaluation`` — rules 9–11 and the paper's Figure 6;
* ``hacs.formats`` — URL canonicalisation, CDX dialects, link extraction, seed lists, WARC;
* ``hacs.evaluation.summary`` — what the evaluated models are called, and a run in plain text.

The synthetic scholarly archive with known truth, on which HACS's tests, demo and benchmarks run,
is a pure package of its own beside this one (``hacs_demo``): it uses none of the method.
"""
