"""Reading the service's `/metrics` with prometheus_client's parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def samples(exposition: str, name: str) -> list[tuple[dict[str, str], float]]:
    """(labels, value) of every sample called `name` (e.g. `translation_batch_pieces_sum`) in a
    Prometheus text exposition, read with prometheus_client's parser. BentoML prefixes some of its
    own metrics with a namespace (`bentoml_service_`...): `name` matches with or without one."""
    return [
        (dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(exposition)
        for sample in family.samples
        if sample.name == name or sample.name.endswith(f"_{name}")
    ]


def histogram_totals(exposition: str, metric: str) -> tuple[float, float]:
    """(sum, count) of a histogram, summed over its label sets."""
    total = sum(value for _, value in samples(exposition, f"{metric}_sum"))
    count = sum(value for _, value in samples(exposition, f"{metric}_count"))
    return total, count


def histogram_buckets(exposition: str, metric: str, **labels: str) -> dict[float, float]:
    """Cumulative bucket counts by upper bound, summed over the label sets that have `labels`."""
    buckets: dict[float, float] = {}
    for sample_labels, value in samples(exposition, f"{metric}_bucket"):
        if all(sample_labels.get(k) == v for k, v in labels.items()):
            le = float(sample_labels["le"])
            buckets[le] = buckets.get(le, 0.0) + value
    return buckets
