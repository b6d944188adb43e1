"""A corpus of real agent frameworks' request logs, recorded through `warmloop record`.

Each driver in `drivers/` runs one framework (pinned in `requirements.txt`, installed in a
virtual environment of its own, never in the project's) on the scripted task of `script`
(16 tool calls, then the answer) against the loopback API of `upstream`; `warmloop record`
sits between them and writes the log. The log is gzipped into `tests/audit/corpus/` beside
its truth (`truth.py`, computed without the audit). Regenerate everything with one command:

    python3 -m venv /tmp/corpus-venv
    /tmp/corpus-venv/bin/pip install -r benchmarks/framework_corpus/requirements.txt
    PYTHONPATH=. .venv/bin/python -m benchmarks framework_corpus --venv /tmp/corpus-venv

(`--only NAME` records one driver; `--truth-only` recomputes the truth files from the logs.)
"""
