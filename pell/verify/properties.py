"""The properties every retried call must keep (docs/verify.md), checked as it ends and as
each new attempt starts."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from pell.oracle_errors import ERROR_CLASSES
from pell.retry import RetryPolicy, pell_errors_on, schedule
from pell.verify.model import Effect, Failure

if TYPE_CHECKING:
    from pell.verify.interpreter import Frame, Run

MODEL_CODES = frozenset({-1086, -6519, -1453})  # errors the model raises itself
MODEL_SQLSTATES = frozenset({"2D000", "25001"})  # and on PostgreSQL


def policy_retries(
    policy: RetryPolicy, failure: Failure, module: tuple[str, ...], postgres: bool = False
) -> bool:
    """Does the policy (retry.md, or docs/postgres.md for that target; not the generated
    handler) retry this error?"""
    if postgres:
        return failure.sqlstate in postgres_retried(policy) or (
            failure.pell_error is not None and failure.pell_error in pell_errors_on(policy, module)
        )
    if policy.on:
        codes = {ERROR_CLASSES[name][0] for name in policy.on if name in ERROR_CLASSES}
        if failure.code is not None and failure.code in codes:
            return True
        error = failure.pell_error
        return error is not None and error in pell_errors_on(policy, module)
    return not (failure.panic or failure.never_retry)


@functools.cache  # asked at every retry of every schedule
def postgres_retried(policy: RetryPolicy) -> frozenset[str]:
    """The SQLSTATEs a policy retries on PostgreSQL: those of the classes `on` names, or with
    no `on` the allow-list (40P01, 40001, 55P03); every other code propagates."""
    from pell.postgres.retry import CONDITIONS, RETRIED_BY_DEFAULT, SQLSTATES

    if policy.on:
        names = [c for name in policy.on for c in CONDITIONS.get(name, ())]
    else:
        names = list(RETRIED_BY_DEFAULT)
    return frozenset(SQLSTATES[name] for name in names)


def check_retry(run: Run, frame: Frame) -> None:
    """A new attempt: (e) the error that ended the last one is one the policy retries;
    (f) what the last one did that no rollback undoes is done again."""
    policy = frame.policy
    assert policy is not None
    failure, frame.caught = frame.caught, None
    postgres = run.program.postgres
    if failure is not None and not policy_retries(policy, failure, frame.module.path, postgres):
        run.violation(
            "verify-retried-error",
            failure.at or (frame.module.path, frame.subprogram.origin),
            f"{frame.subprogram.fn} retries {failure.label}, which its policy does not retry",
        )
    before = frame.phase - 1
    for effect in run.session.permanent:
        if (frame.call_id, before) in effect.frames or any(
            cid == frame.call_id and phase < frame.phase for cid, phase in effect.frames
        ):
            if effect.serial in run.repeated_effects:
                continue
            run.repeated_effects.add(effect.serial)
            how = "committed on its own" if effect.undoable else "outside the transaction"
            run.violation(
                "verify-repeated-effect",
                effect.at,
                f"`{effect.what}` ({how}) is not undone when attempt {frame.passes - 1} "
                f"of {frame.subprogram.fn} fails, and attempt {frame.passes} does it again",
            )


def tagged(effect: Effect, call_id: int) -> bool:
    return any(cid == call_id for cid, _ in effect.frames)


def below_autonomous(run: Run, effect: Effect, frame: Frame) -> bool:
    """Was `effect` done in an autonomous call that `frame` made (its own transaction)?"""
    inside = False
    for call_id, _ in effect.frames:
        if inside and call_id in run.autonomous_calls:
            return True
        inside = inside or call_id == frame.call_id
    return False


def standing(run: Run, frame: Frame) -> list[Effect]:
    """The transactional work of `frame`'s call that stands now: uncommitted or committed,
    in its own transaction (an autonomous fn's commits included)."""
    committed_alone = [e for e in run.session.permanent if e.undoable]
    return [
        e
        for e in run.session.live() + committed_alone
        if tagged(e, frame.call_id) and not below_autonomous(run, e, frame)
    ]


def should_stand(run: Run, effect: Effect, frame: Frame) -> bool:
    """Should `effect` stand after `frame` returned? Done in its final phase, through calls
    that each returned in their own final phase, none of them autonomous."""
    inside = False
    for call_id, phase in effect.frames:
        if call_id == frame.call_id:
            inside = phase == frame.phase
            if not inside:
                return False
            continue
        if not inside:
            continue
        if call_id in run.autonomous_calls or run.final.get(call_id) != (phase, True):
            return False
    return inside and effect.undoable


def check_call(run: Run, frame: Frame, raised: Failure | None) -> None:
    """(a), (b), (d), (e) when a retried call ends."""
    policy = frame.policy
    assert policy is not None
    at = (frame.module.path, frame.subprogram.origin)
    name = frame.subprogram.fn
    live = run.session.live()
    mine = standing(run, frame)
    transaction = policy.scope == "transaction"
    lost_caller = [e for e in run.performed if e.serial in frame.live_before and e not in live]
    if lost_caller and not transaction:
        run.violation(
            "verify-lost-work",
            at,
            f"{name} undoes its caller's earlier work: {run.effects(lost_caller)}",
        )
    if raised is None and frame.caught is not None and not frame.recovered:
        # The last attempt failed, and the call returned: the error was neither retried, nor
        # given to `recover`, nor raised. Its work is gone and the caller is not told.
        run.violation(
            "verify-lost-work",
            frame.caught.at or at,
            f"{name} returned after its attempt failed with {frame.caught.label}: the error "
            "was neither retried nor raised, and the attempt's work is gone",
        )
    if raised is None:
        expected = [
            e
            for e in run.performed
            if should_stand(run, e, frame) and e.serial not in run.undone_by_sql
        ]
        extra = [e for e in mine if e not in expected]
        missing = [e for e in expected if e not in mine]
        if extra:
            run.violation(
                "verify-repeated-work",
                extra[0].at,
                f"{name} returned, and work of a failed attempt still stands: {run.effects(extra)}",
            )
        if missing:
            run.violation(
                "verify-lost-work",
                missing[0].at,
                f"{name} returned, and work of its last attempt is gone: {run.effects(missing)}",
            )
        open_work = [e for e in run.session.current.work if tagged(e, frame.call_id)]
        if transaction and open_work:
            run.violation(
                "verify-leaked-work",
                at,
                f"{name} returned with its work uncommitted: {run.effects(open_work)}",
            )
    else:
        if mine and not transaction:
            run.violation(
                "verify-leaked-work",
                mine[0].at,
                f"{name} raised {raised.label}, and its work still stands: {run.effects(mine)}",
            )
        committed = [e for e in run.session.committed if tagged(e, frame.call_id)]
        if transaction and committed:
            run.violation(
                "verify-leaked-work",
                committed[0].at,
                f"{name} raised {raised.label} after committing {run.effects(committed)}",
            )
        # (On PostgreSQL the error that leaves the CALL aborts the transaction it left [P6].)
        if (
            transaction
            and not frame.opened_before
            and run.session.current.open
            and not run.program.postgres
        ):
            run.violation(
                "verify-leaked-work",
                at,
                f"{name} raised {raised.label} and left its transaction open",
            )
        if (
            raised.code not in MODEL_CODES
            and raised.sqlstate not in MODEL_SQLSTATES
            and frame.counter < policy.attempts
            and frame.passes >= 1
            and policy_retries(policy, raised, frame.module.path, run.program.postgres)
            and not (transaction and frame.opened_before and frame.passes == 0)
        ):
            run.violation(
                "verify-retried-error",
                raised.at or at,
                f"{name} lets {raised.label} out after attempt {frame.passes} of "
                f"{policy.attempts}; its policy retries it",
            )
    worst = schedule(policy)[-1].cumulative_max
    if frame.slept > worst:
        run.violation(
            "verify-attempts",
            at,
            f"{name} sleeps up to {frame.slept} s in all; `pellc explain` promises at most "
            f"{worst} s",
        )
