-- planlock schema version 3: the approval log (CONTRACT §14). Applied once, in the transaction
-- that records it.

-- Every decision on a paused cycle and what became of it, appended, never rewritten; written by
-- any process, without the session's lease (a worker may hold it while it waits). `pause` names
-- the pause (session, cycle, step, validator, the record's creation): a pause has one decision
-- and one outcome, each kept by a unique index, so two deciders at once insert one row.
CREATE TABLE planlock_approval_log (
    seq bigserial PRIMARY KEY,
    session_key text NOT NULL CHECK (octet_length(session_key) BETWEEN 1 AND 256),
    pause text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('decided', 'outcome')),
    event text NOT NULL,
    logged_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX planlock_approval_log_one_decision ON planlock_approval_log (session_key, pause)
    WHERE kind = 'decided';
CREATE UNIQUE INDEX planlock_approval_log_one_outcome ON planlock_approval_log (session_key, pause)
    WHERE kind = 'outcome';

-- The inbox lists the paused sessions among many: only those, through this index.
CREATE INDEX planlock_sessions_paused ON planlock_sessions (session_key) WHERE intervention IS NOT NULL;
