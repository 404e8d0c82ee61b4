"""schedules: partial index on lease_owner for the worker's lease renewal

Revision ID: 0014_schedule_lease_owner
Revises: 0013_refresh_due
Create Date: 2026-11-28 08:20:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0014_schedule_lease_owner'
down_revision: str | Sequence[str] | None = '0013_refresh_due'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Partial on both backends: only claimed Schedules are in it, so renewing a worker's leases reads its own
    # claims, not the whole table.
    with op.batch_alter_table('schedules', schema=None) as batch_op:
        batch_op.create_index('ix_schedules_lease_owner', ['lease_owner'], unique=False,
                              sqlite_where=sa.text('lease_owner IS NOT NULL'),
                              postgresql_where=sa.text('lease_owner IS NOT NULL'))


def downgrade() -> None:
    with op.batch_alter_table('schedules', schema=None) as batch_op:
        batch_op.drop_index('ix_schedules_lease_owner')
