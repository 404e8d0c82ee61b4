"""post metrics (issue 34): per published post, where its readings stand; every reading as a snapshot

Revision ID: 0019_post_metrics
Revises: 0018_events_webhooks
Create Date: 2026-11-28 11:05:00.000000
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op
from sqlalchemy.dialects import postgresql
from sqlalchemy import Text  # noqa: F401  (JSONB variants render astext_type=Text())

import storage.types

revision: str = '0019_post_metrics'
down_revision: str | Sequence[str] | None = '0018_events_webhooks'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

METRICS = ('impressions', 'likes', 'reposts', 'replies', 'saves', 'link_clicks', 'video_views', 'watch_time_seconds')


def _metric_columns() -> list[sa.Column]:
    return [sa.Column(name, sa.Integer(), nullable=True) for name in METRICS]


def upgrade() -> None:
    op.create_table('post_metrics',
    sa.Column('created_at', storage.types.UTCDateTime(), nullable=False),
    sa.Column('updated_at', storage.types.UTCDateTime(), nullable=False),
    sa.Column('publication_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('workspace_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('brand_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('integration_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('platform', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('post_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('publish_id', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('published_at', storage.types.UTCDateTime(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=24), nullable=False),
    sa.Column('step', sa.Integer(), nullable=False),
    sa.Column('next_due_at', storage.types.UTCDateTime(), nullable=True),
    sa.Column('read_at', storage.types.UTCDateTime(), nullable=True),
    *_metric_columns(),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('publication_id')
    )
    with op.batch_alter_table('post_metrics', schema=None) as batch_op:
        batch_op.create_index('ix_post_metrics_brand', ['brand_id', 'published_at'], unique=False)
        batch_op.create_index('ix_post_metrics_due', ['status', 'next_due_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_post_metrics_integration_id'), ['integration_id'], unique=False)

    op.create_table('post_metric_snapshots',
    sa.Column('created_at', storage.types.UTCDateTime(), nullable=False),
    sa.Column('updated_at', storage.types.UTCDateTime(), nullable=False),
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('publication_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('brand_id', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('step', sa.Integer(), nullable=False),
    sa.Column('taken_at', storage.types.UTCDateTime(), nullable=False),
    *_metric_columns(),
    sa.Column('raw', sa.JSON(none_as_null=True).with_variant(postgresql.JSONB(none_as_null=True, astext_type=Text()), 'postgresql'), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('publication_id', 'step', name='uq_post_metric_snapshots_step')
    )


def downgrade() -> None:
    op.drop_table('post_metric_snapshots')
    with op.batch_alter_table('post_metrics', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_post_metrics_integration_id'))
        batch_op.drop_index('ix_post_metrics_due')
        batch_op.drop_index('ix_post_metrics_brand')
    op.drop_table('post_metrics')
