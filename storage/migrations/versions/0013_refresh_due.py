"""refresh_due

The token tick finds due accounts through an index on their stored due time instead of reading every account.
Existing rows get a due time from their credentials' readable expiry less a week (the longest adapter window);
the tick sets the exact one on its first visit.

Revision ID: 0013_refresh_due
Revises: 0012_operations
Create Date: 2026-11-28 08:40:00.000000
"""
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = '0013_refresh_due'
down_revision: str | Sequence[str] | None = '0012_operations'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LONGEST_WINDOW = timedelta(days=7)
BATCH = 500


def _due(credentials: object) -> datetime | None:
    if isinstance(credentials, str):
        try:
            credentials = json.loads(credentials)
        except ValueError:
            return None
    expires = credentials.get("expires_at") if isinstance(credentials, dict) else None
    if not expires:
        return None
    try:
        when = datetime.fromisoformat(str(expires).replace("Z", "+00:00"))
    except ValueError:
        return datetime.now(UTC)  # unreadable: looked at soon, as the tick always did
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) - LONGEST_WINDOW


def upgrade() -> None:
    with op.batch_alter_table('integrations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('refresh_due_at', storage.types.UTCDateTime(), nullable=True))
        batch_op.create_index('ix_integrations_refresh_due', ['status', 'refresh_due_at'], unique=False)
    table = sa.table('integrations', sa.column('id', sa.String()), sa.column('credentials', storage.types.JSONType),
                     sa.column('provider', sa.String()),
                     sa.column('refresh_due_at', storage.types.UTCDateTime()))
    bind = op.get_bind()
    after = ''
    while True:  # keyset batches: memory stays bounded whatever the table's size
        rows = bind.execute(sa.select(table.c.id, table.c.credentials)
                            .where(table.c.provider != 'sandbox', table.c.id > after)
                            .order_by(table.c.id).limit(BATCH)).all()
        for row in rows:
            due = _due(row.credentials)
            if due is not None:
                bind.execute(table.update().where(table.c.id == row.id).values(refresh_due_at=due))
        if len(rows) < BATCH:
            break
        after = rows[-1].id


def downgrade() -> None:
    with op.batch_alter_table('integrations', schema=None) as batch_op:
        batch_op.drop_index('ix_integrations_refresh_due')
        batch_op.drop_column('refresh_due_at')
