-- planlock schema version 3: a person's decision on a paused cycle and the approval log
-- (CONTRACT §14). Applied once, in the transaction that records it.

-- At most one decision a session: the one on its paused cycle (`pause` names it). Written by
-- any process, without the session's lease (a worker may hold it while it waits).
CREATE TABLE planlock_review_decisions (
    session_key text PRIMARY KEY CHECK (octet_length(session_key) BETWEEN 1 AND 256),
    pause text NOT NULL,
    decision text NOT NULL
);

-- Every decision and what became of it, appended, never rewritten.
CREATE TABLE planlock_approval_log (
    seq bigserial PRIMARY KEY,
    session_key text NOT NULL,
    event text NOT NULL,
    logged_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX planlock_approval_log_by_session ON planlock_approval_log (session_key, seq);

-- The inbox lists the paused sessions among many: only those, through this index.
CREATE INDEX planlock_sessions_paused ON planlock_sessions (session_key) WHERE intervention IS NOT NULL;
