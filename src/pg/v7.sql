-- planlock schema version 7: the console's sessions page at its floor (CONTRACT §15). Applied
-- once, in the transaction that records it.

-- When a paused session's pause expires, kept beside its record by the server as the record is
-- written: the sessions page orders 10,000 sessions by status without parsing any record (a
-- record's `shown` may be 64 KiB). The function is immutable because the record's `expiresAt`
-- always carries its offset (`Z`): the session's time zone never changes what it names.
CREATE FUNCTION planlock_pause_expiry(intervention text) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (intervention::jsonb ->> 'expiresAt')::timestamptz $$;
ALTER TABLE planlock_sessions ADD COLUMN pause_expires_at timestamptz
    GENERATED ALWAYS AS (planlock_pause_expiry(intervention)) STORED;
