"""Reading Prometheus text as the metrics tests do."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def value(text: str, sample: str, **labels: str) -> float:
    """The sum of the samples named ``sample`` whose labels include ``labels``."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == sample and labels.items() <= s.labels.items()
    )
