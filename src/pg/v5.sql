-- planlock schema version 5: the cycle history (CONTRACT §15). Applied once, in the transaction
-- that records it.

-- Each finished cycle's entry (its report, how it ended, when), written by the worker holding
-- the session's lease once the cycle has ended; the last N per session are kept (older rows are
-- deleted by the statement that adds one). No prompt, answer or memory text unless the runtime
-- records content.
CREATE TABLE planlock_cycle_history (
    seq bigserial PRIMARY KEY,
    session_key text NOT NULL CHECK (octet_length(session_key) BETWEEN 1 AND 256),
    cycle bigint NOT NULL,
    outcome text NOT NULL CHECK (outcome IN ('completed', 'paused', 'failed')),
    entry text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX planlock_cycle_history_session ON planlock_cycle_history (session_key, seq);
