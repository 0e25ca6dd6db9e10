"""booking copies: each booking carries its lease, the lease's window and what it holds

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-21 12:11:14.055737
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import blazar_lite.db.base

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

# What each existing booking holds, from its reservation and lease: slots × the reservation's
# sizes, or the whole host for physical:host (amounts 0).
_RESERVATION = "FROM reservations r WHERE r.id = reservation_bookings.reservation_id"
_LEASE = ("FROM reservations r JOIN leases l ON l.id = r.lease_id "
          "WHERE r.id = reservation_bookings.reservation_id")
_PHYSICAL = "r.resource_type = 'physical:host'"
_FILL = f"""
UPDATE reservation_bookings SET
  lease_id = (SELECT r.lease_id {_RESERVATION}),
  start_date = (SELECT l.start_date {_LEASE}),
  end_date = (SELECT l.end_date {_LEASE}),
  vcpus = (SELECT CASE WHEN {_PHYSICAL} THEN 0 ELSE reservation_bookings.slots * COALESCE(r.vcpus, 0) END
           {_RESERVATION}),
  memory_mb = (SELECT CASE WHEN {_PHYSICAL} THEN 0 ELSE reservation_bookings.slots * COALESCE(r.memory_mb, 0) END
               {_RESERVATION}),
  disk_gb = (SELECT CASE WHEN {_PHYSICAL} THEN 0 ELSE reservation_bookings.slots * COALESCE(r.disk_gb, 0) END
             {_RESERVATION}),
  exclusive = (SELECT {_PHYSICAL} {_RESERVATION})
"""
_COPIES = (
    ('lease_id', sa.String(length=36)),
    ('start_date', blazar_lite.db.base.UTCDateTime()),
    ('end_date', blazar_lite.db.base.UTCDateTime()),
    ('vcpus', sa.Integer()),
    ('memory_mb', sa.Integer()),
    ('disk_gb', sa.Integer()),
    ('exclusive', sa.Boolean()),
)


def upgrade() -> None:
    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.create_index('ix_leases_status_end', ['status', 'end_date'], unique=False)

    # Added nullable, filled from the reservations and leases, then made NOT NULL.
    with op.batch_alter_table('reservation_bookings', schema=None) as batch_op:
        for name, type_ in _COPIES:
            batch_op.add_column(sa.Column(name, type_, nullable=True))
    op.execute(_FILL)
    with op.batch_alter_table('reservation_bookings', schema=None) as batch_op:
        for name, type_ in _COPIES:
            batch_op.alter_column(name, existing_type=type_, nullable=False)
        batch_op.create_index(batch_op.f('ix_reservation_bookings_lease_id'), ['lease_id'], unique=False)
        batch_op.create_index('ix_reservation_bookings_window', ['end_date', 'start_date'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_reservation_bookings_lease_id_leases'), 'leases', ['lease_id'],
                                    ['id'], ondelete='CASCADE')


def downgrade() -> None:
    with op.batch_alter_table('reservation_bookings', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_reservation_bookings_lease_id_leases'), type_='foreignkey')
        batch_op.drop_index('ix_reservation_bookings_window')
        batch_op.drop_index(batch_op.f('ix_reservation_bookings_lease_id'))
        for name, _ in reversed(_COPIES):
            batch_op.drop_column(name)

    with op.batch_alter_table('leases', schema=None) as batch_op:
        batch_op.drop_index('ix_leases_status_end')
