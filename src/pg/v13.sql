-- planlock schema version 13: a reservation whose worker died is charged, not released
-- (CONTRACT §20, amended).
--
-- A worker killed after its call was sent spent tokens nobody settles. The next reservation
-- that finds its budget short and the worker's lease gone now charges the reservation whole
-- ('charged'): over-charged by a crash, never overspent. Should the call's settlement come after
-- all (a worker that stalled past its lease), it corrects the charge to what was used
-- ('recharged', folded in by the next reservation).

CREATE OR REPLACE FUNCTION planlock_budget_reserve(p_id uuid, p_key text, p_owner uuid, p_tokens bigint)
RETURNS TABLE (prefix text, tokens bigint, left_tokens bigint, reserved bigint, resets_at double precision)
LANGUAGE plpgsql AS $$
DECLARE
    b record;
    short record;
    prefixes text[] := '{}';
BEGIN
    -- Every budget covering the session, locked first and in one order (no two reservations
    -- wait on each other's rows).
    FOR b IN
        SELECT x.prefix FROM planlock_budgets x WHERE starts_with(p_key, x.prefix) ORDER BY x.prefix FOR UPDATE
    LOOP
        prefixes := prefixes || b.prefix;
    END LOOP;
    IF cardinality(prefixes) = 0 THEN
        RETURN;
    END IF;
    -- The settled reservations, folded into the periods they were made in.
    WITH folded AS (
        DELETE FROM planlock_budget_holds h
        WHERE h.prefix = ANY (prefixes) AND h.state IN ('settled', 'late', 'recharged')
        RETURNING h.prefix, h.period_start, h.state, h.tokens, h.used),
    per AS (
        SELECT f.prefix, f.period_start, sum(CASE WHEN f.state = 'settled' THEN f.tokens ELSE 0 END) AS back,
               -- A hold charged whole when its worker died is corrected to what its call used.
               sum(greatest(coalesce(f.used, 0), 0) - CASE WHEN f.state = 'recharged' THEN f.tokens ELSE 0 END)
                   AS charged
        FROM folded f GROUP BY f.prefix, f.period_start)
    UPDATE planlock_budgets x SET reserved = greatest(x.reserved - per.back, 0),
        used = greatest(x.used + per.charged, 0)
    FROM per WHERE x.prefix = per.prefix AND x.period_start = per.period_start;
    -- Rolled over to the current period.
    UPDATE planlock_budgets x SET period_start = planlock_period_start(x.period_secs), used = 0, reserved = 0
    WHERE x.prefix = ANY (prefixes) AND x.period_start < planlock_period_start(x.period_secs);
    FOR attempt IN 1..2 LOOP
        -- The first budget that cannot cover the call.
        SELECT x.prefix AS p, x.tokens AS t, greatest(x.tokens - x.used - x.reserved, 0) AS l, x.reserved AS r,
               extract(epoch FROM x.period_start)::double precision + x.period_secs AS at
        INTO short
        FROM planlock_budgets x
        WHERE x.prefix = ANY (prefixes) AND x.used + x.reserved + p_tokens > x.tokens
        ORDER BY x.prefix LIMIT 1;
        EXIT WHEN NOT FOUND;
        IF attempt = 2 THEN
            -- Refused: nothing is reserved.
            prefix := short.p; tokens := short.t; left_tokens := short.l; reserved := short.r; resets_at := short.at;
            RETURN NEXT;
            RETURN;
        END IF;
        -- The reservations of these budgets whose worker no longer holds its session's lease
        -- (killed, or stalled past it) are charged all they reserved: their call may have been
        -- sent (over-charged by a crash, never overspent); a late settlement corrects it. Those
        -- charged a day ago are forgotten.
        WITH gone AS (
            UPDATE planlock_budget_holds h SET state = 'charged'
            WHERE h.state = 'held' AND h.prefix = ANY (prefixes) AND NOT EXISTS (
                SELECT 1 FROM planlock_sessions s
                WHERE s.session_key = h.session_key AND s.tenant = h.tenant
                  AND s.lease_owner = h.owner AND s.lease_until > now())
            RETURNING h.prefix, h.period_start, h.tokens),
        per AS (SELECT g.prefix, g.period_start, sum(g.tokens) AS n FROM gone g GROUP BY g.prefix, g.period_start)
        UPDATE planlock_budgets x SET reserved = greatest(x.reserved - per.n, 0), used = x.used + per.n
        FROM per WHERE x.prefix = per.prefix AND x.period_start = per.period_start;
        DELETE FROM planlock_budget_holds h
        WHERE h.state IN ('released', 'charged') AND h.prefix = ANY (prefixes)
          AND h.made_at < now() - interval '1 day';
    END LOOP;
    INSERT INTO planlock_budget_holds (id, prefix, session_key, owner, period_start, tokens)
    SELECT p_id, x.prefix, p_key, p_owner, x.period_start, p_tokens
    FROM planlock_budgets x WHERE x.prefix = ANY (prefixes);
    UPDATE planlock_budgets x SET reserved = x.reserved + p_tokens WHERE x.prefix = ANY (prefixes);
END
$$;

-- Settles reservations `p_ids` to what their calls used (`p_used`, in the same order): each is
-- marked with what it used, for the next reservation to fold in; one charged whole when its
-- worker died is marked to be corrected ('recharged'). A reservation is settled once, however
-- often it is sent. It touches no budget: a save that settles never waits on one.
CREATE OR REPLACE FUNCTION planlock_budget_settle(p_ids uuid[], p_used bigint[]) RETURNS bigint
LANGUAGE sql AS $$
    WITH u AS (SELECT * FROM unnest(p_ids, p_used) AS u(id, spent)),
    done AS (
        UPDATE planlock_budget_holds h
        SET state = CASE h.state WHEN 'held' THEN 'settled' WHEN 'charged' THEN 'recharged' ELSE 'late' END,
            used = greatest(u.spent, 0)
        FROM u WHERE h.id = u.id AND h.state IN ('held', 'released', 'charged')
        RETURNING 1)
    SELECT count(*) FROM done
$$;
