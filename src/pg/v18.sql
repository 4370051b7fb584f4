-- planlock schema version 18: an abandoned cycle is kept in the history; a session keeps the
-- plan it runs; a decision wakes the workers that act on it (CONTRACT §21).
--
-- Schema 5's checks named three ends of a cycle (completed, paused, failed), but a cycle also
-- ends abandoned (a pause given up or rejected), and files keep that entry. PostgreSQL refused
-- it, and the history of a session whose pause was abandoned lost that cycle. The checks now
-- name the four ends of `CycleEnd`; rows already there meet them.

ALTER TABLE planlock_cycle_history
    DROP CONSTRAINT planlock_cycle_history_outcome_check,
    ADD CONSTRAINT planlock_cycle_history_outcome_check
        CHECK (outcome IN ('completed', 'paused', 'failed', 'abandoned')) NOT VALID;
ALTER TABLE planlock_cycle_history VALIDATE CONSTRAINT planlock_cycle_history_outcome_check;

ALTER TABLE planlock_sessions
    DROP CONSTRAINT planlock_sessions_last_outcome_check,
    ADD CONSTRAINT planlock_sessions_last_outcome_check
        CHECK (last_outcome IN ('completed', 'paused', 'failed', 'abandoned')) NOT VALID;
ALTER TABLE planlock_sessions VALIDATE CONSTRAINT planlock_sessions_last_outcome_check;

-- The plan a session runs (`PlanDocument`'s JSON), kept with the end of its first cycle, so a
-- worker acting on its decided pause resumes it without being handed the plan.
ALTER TABLE planlock_sessions ADD COLUMN plan text;

-- A decision wakes the workers: a notification on `planlock_decided`, sent when the decision's
-- transaction commits, whatever path recorded it (the CLI, the console, the library). Every
-- listener of the database hears it, whatever its tenant, so its payload names nothing: only
-- the row's `seq`, which a worker reads back in its own tenant (another tenant's row is not
-- its to see). A worker that misses it (a pooler in transaction mode does not deliver
-- notifications) finds the decision at its next poll.
CREATE FUNCTION planlock_notify_decided() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('planlock_decided', NEW.seq::text);
    RETURN NULL;
END
$$;
CREATE TRIGGER planlock_decided AFTER INSERT ON planlock_approval_log
    FOR EACH ROW WHEN (NEW.kind = 'decided') EXECUTE FUNCTION planlock_notify_decided();
