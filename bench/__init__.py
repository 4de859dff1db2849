"""HACS's benchmarks: each module prints the figures an issue or ``docs/readings.md`` asks for,
and the seed that repeats them.

Run one from the project root as a module of this package::

    .venv/bin/python -m bench.NAME [options]      # e.g. python -m bench.replay --sites 500
    .venv/bin/python -m bench.NAME --help         # its options

``bench.common`` holds what the benches share (the demo archive's period and reading, the
Evaluation 2 and replay loops, the ``--sites``/``--seed`` options). The benches of readings
measured and left out were retired once ``docs/readings.md`` recorded their figures
(``docs/benchmarks.md`` names the commit that runs them).
"""
