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

-- A pause's `paused` event (the outbox of `pause.created`, CONTRACT §18), as planlock writes it
-- (`ApprovalEvent::paused`), made from its record: the pause's statement writes the record
-- alone, and the pause's outcome logs this first, in its own statement, where no sender has
-- (`tests/postgres` holds the two to the same value). The column that kept a copy goes.
CREATE FUNCTION planlock_paused_event(intervention text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
        SELECT jsonb_strip_nulls(jsonb_build_object(
            'event', 'paused',
            'pause', jsonb_build_object(
                'sessionId', r -> 'sessionId', 'cycle', r -> 'cycle', 'stepId', r -> 'stepId',
                'validatorId', r -> 'validator' -> 'id', 'createdAt', r -> 'createdAt'),
            'stepType', r -> 'stepType', 'reason', r -> 'reason',
            'shownDigest', r -> 'shownDigest', 'expiresAt', r -> 'expiresAt'))::text
        FROM (SELECT intervention::jsonb AS r) AS record
    $$;
ALTER TABLE planlock_sessions DROP COLUMN pause_notice;
