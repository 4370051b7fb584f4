-- planlock schema version 2. Applied once, in the transaction that records it.

-- A keyed write's first step in one round trip: wait for the key's lock (an advisory lock on its
-- hash, held to the end of the transaction, so two workers writing the same key at once take
-- turns), then read what the key's write returned, if it happened. PL/pgSQL, volatile: the read
-- is a statement of its own, so it sees a write that committed while this one waited.
CREATE FUNCTION planlock_claim_write(ns text, key text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(ns || '/' || key, 0));
    SELECT result INTO done FROM planlock_writes WHERE namespace = ns AND idem_key = key;
    RETURN done;
END
$$;
