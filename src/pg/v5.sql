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
    -- A failed cycle's class: the sessions page lists a session whose last cycle failed
    -- FailFast as halted without reading its entry.
    failure_class text CHECK (failure_class IN ('CycleFail', 'FailFast')),
    entry text NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX planlock_cycle_history_session ON planlock_cycle_history (session_key, seq);

-- The session's last finished cycle, kept on its row by the statement that adds the history
-- entry, so that the sessions page orders every session by status and activity from this table
-- alone (its class makes a session "halted").
ALTER TABLE planlock_sessions
    ADD COLUMN last_outcome text CHECK (last_outcome IN ('completed', 'paused', 'failed')),
    ADD COLUMN last_class text CHECK (last_class IN ('CycleFail', 'FailFast')),
    ADD COLUMN last_cycle_at timestamptz;
