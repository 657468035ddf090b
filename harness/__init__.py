"""The one server launcher, load generator and metrics reader of the project, imported by the
tests, the benchmark (bench/) and locustfile.py alike, so that every load is made and checked one
way. Not part of the product: it is not in the bento.

- `harness.servers`: a real `bentoml serve` on a free port, as `make serve` runs it;
- `harness.load`: the closed-loop load generator and its answer check;
- `harness.corpus`: the fixture corpus as language pairs;
- `harness.metrics`: `/metrics` read with prometheus_client's parser.
"""
