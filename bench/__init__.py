"""`make bench`: offline limit, this service and a per-request baseline, measured in one run.

Run `python -m bench --help`; bench/README.md explains the systems, the columns and the caveats.
"""
