"""Running due lease events: one pass (`run_due_events`), and the APScheduler job that repeats it.

Each event runs in transactions of its own, after its claim is committed: a failure rolls back
only that event's work. Generation conflicts in Placement (another writer touched the same
provider) are retried at once; transient failures (the database went away, the lease is busy
with a user's request) put the event back with a growing delay; anything else is a real failure:
the event and its lease go to ERROR, with the reason in the lease's status_reason.
"""

from __future__ import annotations

import datetime as dt
import logging
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.orm import Session

from blazar_lite.db import Database, utcnow
from blazar_lite.db.maintenance import refresh_statistics
from blazar_lite.deployments import events as governor_events
from blazar_lite.exceptions import ConcurrentUpdate
from blazar_lite.leases import enforcement, history, idle, lifecycle, notices
from blazar_lite.leases.dates import describe_date
from blazar_lite.leases.models import (
    BEFORE_END_LEASE,
    DONE,
    END_LEASE,
    ERROR,
    EVENT_ERROR,
    START_LEASE,
    UNDONE,
    Lease,
)
from blazar_lite.scheduler.claims import Claim, claim_due_events, held, holds, next_due_time, worker_identity
from blazar_lite.scheduler.liveness import Liveness
from blazar_lite.settings import Settings
from blazar_lite.webhooks import delivery, subscriptions

LOG = logging.getLogger(__name__)

# Outcomes of one event.
RAN = "done"
RETRY = "retry"
FAILED = "error"
LOST = "lost"

DEFAULT_CLAIM_TIMEOUT = dt.timedelta(seconds=300)
DEFAULT_MAX_ATTEMPTS = 5
# Placement generation conflicts resolve on a re-read; a few immediate retries suffice even when
# several schedulers write to the same providers.
GENERATION_RETRIES = 10
MAX_BACKOFF = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class EventResult:
    event_id: str
    lease_id: str
    event_type: str
    outcome: str
    detail: str | None = None


class _Transient(Exception):
    """A failure worth trying again later."""


def backoff(attempts: int) -> dt.timedelta:
    """The wait before the next try after `attempts` tries: 2, 4, 8, … seconds, at most 5 minutes."""
    return min(dt.timedelta(seconds=2 ** attempts), MAX_BACKOFF)


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, lifecycle.LeaseBusy | OperationalError | DisconnectionError):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


_LOST = object()


def _step(database: Database, claim: Claim, worker_id: str, action: Callable[[Session], object],
          finish: bool) -> object:
    """Run `action` in a transaction while the claim is still ours (retrying generation
    conflicts) and return what it returns; with `finish`, mark the event DONE in that same
    transaction. `_LOST` when the claim was lost."""
    for attempt in range(GENERATION_RETRIES):
        try:
            with database.transaction() as session:
                event = holds(session, claim, worker_id)
                if event is None:
                    return _LOST
                value = action(session)
                if finish:
                    event.status = DONE
                    event.claimed_until = None
                    event.last_error = None
            return value
        except ConcurrentUpdate:
            if attempt == GENERATION_RETRIES - 1:
                raise
            LOG.debug("generation conflict running %s of lease %s; trying again", claim.event_type,
                      claim.lease_id)
    return _LOST


def _nothing(_session: Session) -> None:
    return None


# Each event's own transaction also records it in the lease's history (and so for the project's
# webhooks) and tells the governors of the shapes that use the lease.

def _before_end(session: Session, lease_id: str) -> None:
    lifecycle.before_end_lease(session, lease_id)
    lease = session.get(Lease, lease_id)
    if lease is not None:
        history.record(session, lease, history.BEFORE_END,
                       f"Lease {lease.name} ends at {describe_date(lease.end_date)}.")
    governor_events.lease_ending(session, lease_id)


def _start(session: Session, lease_id: str) -> bool:
    started = lifecycle.start_lease(session, lease_id)
    lease = session.get(Lease, lease_id)
    if started and lease is not None:
        history.record(session, lease, history.STARTED, f"Lease {lease.name} started.")
        governor_events.lease_started(session, lease_id)
    return started


def _end(session: Session, lease_id: str) -> None:
    lifecycle.end_lease(session, lease_id)
    lease = session.get(Lease, lease_id)
    if lease is not None:
        history.record(session, lease, history.ENDED, f"Lease {lease.name} ended.")


def _steps(event_type: str) -> tuple[Callable[[Session, str], bool], Callable[..., object]]:
    """The lifecycle's two steps for a start or an end: mark the lease, then act."""
    if event_type == START_LEASE:
        return lifecycle.mark_starting, _start
    if event_type == END_LEASE:
        return lifecycle.mark_terminating, _end
    raise ValueError(f"unknown event type {event_type!r}")


def _run(database: Database, claim: Claim, worker_id: str, marked: bool | None = None,
         usage: enforcement.UsageRules = enforcement.NO_LIMITS) -> bool:
    """Run one claimed event to DONE; False when the claim was lost on the way. `marked` is what
    marking the lease returned when `mark_claimed` did it already (None: not done yet); `usage`
    says whether a lease policy service hears of each end."""
    lease_id = claim.lease_id
    if claim.event_type == BEFORE_END_LEASE:
        return _step(database, claim, worker_id, lambda s: _before_end(s, lease_id), finish=True) is not _LOST
    mark, act = _steps(claim.event_type)
    if marked is None:
        # The transitional state is committed on its own, so that users see the event at work.
        marked = _step(database, claim, worker_id, lambda s: mark(s, lease_id), finish=False)
        if marked is _LOST:
            return False
    def action(session: Session) -> None:
        act(session, lease_id)
        lease = session.get(Lease, lease_id)
        if claim.event_type == END_LEASE and lease is not None:
            enforcement.queue_on_end(session, usage, lease)

    return _step(database, claim, worker_id, action if marked else _nothing, finish=True) is not _LOST


def mark_claimed(database: Database, claims: list[Claim], worker_id: str) -> dict[str, bool]:
    """Move the leases of the claimed starts and ends into their transitional state in one
    transaction for the lot (rather than one each): {event id: what marking returned}. An event
    whose claim was lost, or whose lease is busy or gone, is left out, and so is every event when
    the transaction fails: marking it on its own meets that again and deals with it."""
    wanted = [claim for claim in claims if claim.event_type in (START_LEASE, END_LEASE)]
    if len(wanted) < 2:
        return {}
    marked: dict[str, bool] = {}
    try:
        with database.transaction() as session:
            ours = held(session, wanted, worker_id)
            for claim in wanted:
                if claim.event_id not in ours:
                    continue
                mark, _act = _steps(claim.event_type)
                try:
                    # Refusals come before any change, so the others' marks still commit.
                    marked[claim.event_id] = mark(session, claim.lease_id)
                except (lifecycle.LeaseBusy, lifecycle.LeaseGone):
                    continue
    except Exception as exc:  # noqa: BLE001 - each event is then marked on its own, which reports it
        LOG.debug("marking %d leases together failed, marking each on its own: %s", len(wanted), _reason(exc))
        return {}
    return marked


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc)
    # Database errors carry the whole statement after the first line; the reason is that line.
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _retry_later(database: Database, claim: Claim, worker_id: str, now: dt.datetime, reason: str) -> None:
    with database.transaction() as session:
        event = holds(session, claim, worker_id)
        if event is not None:
            event.status = UNDONE
            event.claimed_by = None
            event.claimed_until = now + backoff(claim.attempts)
            event.last_error = reason


def _fail(database: Database, claim: Claim, worker_id: str, reason: str) -> None:
    with database.transaction() as session:
        event = holds(session, claim, worker_id)
        if event is None:
            return
        event.status = EVENT_ERROR
        event.claimed_until = None
        event.last_error = reason
        lease = session.get(Lease, claim.lease_id, with_for_update=True)
        if lease is not None:
            lease.status = ERROR
            lease.status_reason = f"{claim.event_type} failed: {reason}"
            history.record(session, lease, history.ERROR, lease.status_reason, {"event": claim.event_type})


def run_claim(database: Database, claim: Claim, worker_id: str, *, now: dt.datetime | None = None,
              max_attempts: int = DEFAULT_MAX_ATTEMPTS, marked: bool | None = None,
              usage: enforcement.UsageRules = enforcement.NO_LIMITS) -> EventResult:
    """Run one event this worker claimed, and record how it went (`marked`, `usage`: see `_run`)."""
    now = now or utcnow()

    def result(outcome: str, detail: str | None = None) -> EventResult:
        return EventResult(claim.event_id, claim.lease_id, claim.event_type, outcome, detail)

    if claim.attempts > max_attempts:
        reason = f"gave up after {max_attempts} attempts; the last one did not finish"
        _fail(database, claim, worker_id, reason)
        return result(FAILED, reason)
    try:
        ran = _run(database, claim, worker_id, marked, usage)
    except lifecycle.LeaseGone:
        # The lease was deleted after the claim; its events went with it.
        return result(LOST, "lease deleted")
    except Exception as exc:  # noqa: BLE001 - every failure is recorded on the event and its lease
        reason = _reason(exc)
        if _is_transient(exc) and claim.attempts < max_attempts:
            LOG.warning("%s of lease %s failed (attempt %d of %d), retrying: %s", claim.event_type,
                        claim.lease_id, claim.attempts, max_attempts, reason)
            _retry_later(database, claim, worker_id, now, reason)
            return result(RETRY, reason)
        LOG.error("%s of lease %s failed: %s", claim.event_type, claim.lease_id, reason,
                  exc_info=not isinstance(exc, lifecycle.LeaseBusy))
        _fail(database, claim, worker_id, reason)
        return result(FAILED, reason)
    if not ran:
        return result(LOST, "claim taken over by another scheduler")
    LOG.info("%s of lease %s done", claim.event_type, claim.lease_id)
    return result(RAN)


def run_due_events(database: Database, now: dt.datetime | None = None, worker_id: str | None = None, *,
                   claim_timeout: dt.timedelta = DEFAULT_CLAIM_TIMEOUT, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                   batch_size: int = 20, usage: enforcement.UsageRules = enforcement.NO_LIMITS,
                   liveness: Liveness | None = None) -> list[EventResult]:
    """One scheduler pass: claim the events due at `now` (default: the current time), a batch at
    a time, and run each, until none is left; with `liveness`, the events of schedulers that died
    holding them are due too. Returns what happened to each, in running order."""
    worker_id = worker_id or worker_identity()
    results: list[EventResult] = []
    while True:
        moment = now or utcnow()
        claims = claim_due_events(database, worker_id, moment, claim_timeout, batch_size, liveness)
        if not claims:
            return results
        # Events past their attempts go to ERROR without being marked again.
        marked = mark_claimed(database, [claim for claim in claims if claim.attempts <= max_attempts], worker_id)
        for claim in claims:
            results.append(run_claim(database, claim, worker_id, now=moment, max_attempts=max_attempts,
                                     marked=marked.get(claim.event_id), usage=usage))


# Seconds between two refreshes of the database's planner statistics (SQLite only).
STATISTICS_INTERVAL = 3600
EVENTS_JOB = "lease-events"
WEBHOOKS_JOB = "webhook-deliveries"
# Idleness is counted in minutes: a look every minute is enough.
IDLE_INTERVAL = 60
# Who receives the events of each webhook source.
RECEIVERS: dict[str, delivery.ReceiverLookup] = {governor_events.SOURCE: governor_events.receiver,
                                                  subscriptions.SOURCE: subscriptions.receiver}
# A pass brought forward to less than this after the current one ends could find the current one
# still counted as running, and APScheduler would skip it.
WAKE_MARGIN = dt.timedelta(milliseconds=100)


class LeaseScheduler:
    """A background APScheduler job that runs `run_due_events` every `[scheduler] interval`
    seconds, with its own database engine, and also when an event falls due before the next of
    those passes, so that leases start on time rather than up to an interval late. One pass at a
    time: a pass that overruns the interval delays the next rather than overlapping it."""

    def __init__(self, settings: Settings, database: Database | None = None) -> None:
        from apscheduler.schedulers.background import BackgroundScheduler

        self.settings = settings
        self.database = database or Database(settings.database_url)
        self._owns_database = database is None
        self.worker_id = worker_identity()
        self.liveness = Liveness(self.database, self.worker_id)
        # What the settings say, read once: they do not change while the process runs.
        self.usage = enforcement.usage_rules(settings)
        self.idle = idle.idle_rules(settings)
        self.delivery_policy = delivery.DeliveryPolicy(
            timeout=settings.webhooks_timeout, max_attempts=settings.webhooks_max_attempts,
            retry_delay=dt.timedelta(seconds=settings.webhooks_retry_delay))
        self.receivers = {**RECEIVERS, enforcement.SOURCE: enforcement.on_end_receiver(self.usage)}
        self._scheduler = BackgroundScheduler(timezone=dt.UTC)
        self._scheduler.add_job(self.run_once, "interval", seconds=settings.scheduler_interval, max_instances=1,
                                coalesce=True, id=EVENTS_JOB, next_run_time=dt.datetime.now(dt.UTC))
        self._scheduler.add_job(self.refresh_statistics, "interval", seconds=STATISTICS_INTERVAL, max_instances=1,
                                coalesce=True, id="statistics")
        if self.idle.active:
            self._scheduler.add_job(self.apply_idle_policy, "interval", seconds=IDLE_INTERVAL, max_instances=1,
                                    coalesce=True, id="idle-leases")
        # Webhooks go out in a job of their own: a slow receiver never holds up a lease's event.
        self._scheduler.add_job(self.deliver_webhooks, "interval", seconds=settings.webhooks_interval,
                                max_instances=1, coalesce=True, id=WEBHOOKS_JOB)

    def apply_idle_policy(self) -> list[tuple[str, str]]:
        """Warn and end idle leases (a failure is logged); an ended one is ended by the next pass."""
        try:
            return idle.apply(self.database, self.idle, utcnow())
        except Exception:
            LOG.exception("idle-lease pass failed; the next one tries again")
            return []

    def deliver_webhooks(self) -> list[delivery.DeliveryResult]:
        """One delivery pass over the webhook events that are due (a failure is logged)."""
        try:
            return delivery.deliver_due(self.database, self.receivers, worker_id=self.worker_id,
                                        policy=self.delivery_policy)
        except Exception:
            LOG.exception("webhook delivery pass failed; the next one tries again")
            return []

    def refresh_statistics(self) -> None:
        """Keep SQLite's planner statistics up to date as leases come and go (a failure is logged)."""
        try:
            refresh_statistics(self.database.engine)
        except Exception:
            LOG.exception("refreshing the database statistics failed; the next run tries again")

    def run_once(self) -> list[EventResult]:
        """One pass; a failure of the pass itself (database down) is logged, and the next pass tries again.
        Afterwards the next pass is brought forward to the next event's time when that comes first."""
        try:
            self.liveness.hold()
            results = run_due_events(self.database, worker_id=self.worker_id,
                                     claim_timeout=dt.timedelta(seconds=self.settings.scheduler_claim_timeout),
                                     max_attempts=self.settings.scheduler_max_attempts,
                                     usage=self.usage, liveness=self.liveness)
            notices.send_due(self.database, utcnow())
        except Exception:
            LOG.exception("scheduler pass failed; the next one tries again")
            return []
        try:
            self.wake_for_next_event(utcnow())
        except Exception:
            LOG.exception("looking up the next due event failed; the next pass runs at the interval")
        return results

    def wake_for_next_event(self, now: dt.datetime) -> dt.datetime | None:
        """When an event falls due between `now` and the next pass, move that pass to the event's
        time (at least WAKE_MARGIN from `now`); the time it was moved to, or None."""
        job = self._scheduler.get_job(EVENTS_JOB)
        if job is None or job.next_run_time is None or job.next_run_time <= now + WAKE_MARGIN:
            return None
        due = next_due_time(self.database, now, job.next_run_time)
        if due is None:
            return None
        wake = max(due, now + WAKE_MARGIN)
        self._scheduler.modify_job(EVENTS_JOB, next_run_time=wake)
        return wake

    def start(self) -> None:
        self._scheduler.start()
        LOG.info("lease scheduler %s started: a pass every %d s", self.worker_id, self.settings.scheduler_interval)

    def shutdown(self) -> None:
        """Stop, letting a running pass finish its current event."""
        self._scheduler.shutdown(wait=True)
        self.liveness.release()
        if self._owns_database:
            self.database.dispose()
        LOG.info("lease scheduler %s stopped", self.worker_id)


def run_forever(settings: Settings) -> None:
    """Run the scheduler in the foreground until SIGTERM or SIGINT."""
    stop = threading.Event()

    def request_stop(signum: int, _frame: object) -> None:
        LOG.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    # APScheduler logs every run of the job at INFO: every few seconds, and says nothing ours don't.
    logging.getLogger("apscheduler.executors").setLevel(max(logging.WARNING, logging.getLogger().level))
    scheduler = LeaseScheduler(settings)
    scheduler.start()
    try:
        while not stop.wait(1):
            pass
    finally:
        scheduler.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
