"""The metric columns are the common metrics, in their order, on both tables that hold figures."""

from __future__ import annotations

from sqlmodel import SQLModel

from schemas.metrics import COMMON
from storage.tables.analytics import CommonMetrics, MetricSnapshot, PostMetricsState


def test_the_common_columns_are_the_common_metrics() -> None:
    assert tuple(CommonMetrics.model_fields) == COMMON


def test_both_tables_carry_every_common_metric_as_a_nullable_integer() -> None:
    for name_ in (PostMetricsState.__tablename__, MetricSnapshot.__tablename__):
        table = SQLModel.metadata.tables[str(name_)]
        for name in COMMON:
            column = table.columns[name]
            assert column.nullable and column.type.python_type is int, (table.name, name)
