-- planlock schema version 4: a session write that finds its row no longer this worker's raises,
-- so that a cycle's save and its COMMIT go to the server together (one round trip) and a
-- fenced save rolls the whole cycle back. Applied once, in the transaction that records it.

-- Called by a session write whose compare-and-set matched no row (another worker took the
-- lease, or wrote since): aborts the transaction with SQLSTATE PLF01.
CREATE FUNCTION planlock_fenced(session_key text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the session row of % was written by another worker since this one read it', session_key
        USING ERRCODE = 'PLF01';
END
$$;
