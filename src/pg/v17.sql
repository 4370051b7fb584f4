-- planlock schema version 17: a reservation that every budget covers is two statements
-- (CONTRACT §20; issue 55's target of 1.3× the CPU of a cycle without a budget).
--
-- Schema 15's reservation read its budgets three times (to lock them, to check them, to write
-- them) through a function that folds in settled reservations even when there are none to fold.
-- Most reservations find every budget in its period, not due for a fold, and covering the call:
-- those now lock and check in one read and write the budgets and the hold in one statement.
-- Any other case takes schema 15's path unchanged (the rows are already locked, in order).

CREATE OR REPLACE FUNCTION planlock_budget_reserve(p_id uuid, p_key text, p_owner uuid, p_tokens bigint)
RETURNS TABLE (prefix text, tokens bigint, left_tokens bigint, reserved bigint, resets_at double precision)
LANGUAGE plpgsql AS $$
DECLARE
    me text := planlock_tenant();
    b record;
    short record;
    prefixes text[] := '{}';
    f_prefix text[] := '{}';
    f_period timestamptz[] := '{}';
    f_back bigint[] := '{}';
    f_charged bigint[] := '{}';
    due boolean := false;
    folded boolean := false;
    plain boolean := true;
    -- How many reservations a budget takes between two folds of its settled ones.
    FOLD_EVERY CONSTANT integer := 32;
BEGIN
    -- Every budget covering the session, locked first and in one order (no two reservations
    -- wait on each other's rows).
    FOR b IN
        SELECT x.prefix, x.unfolded,
               x.period_start >= planlock_period_start(x.period_secs)
               AND x.used + x.reserved + p_tokens <= x.tokens AS covers
        FROM planlock_budgets x
        WHERE x.tenant = me AND starts_with(p_key, x.prefix) ORDER BY x.prefix FOR UPDATE
    LOOP
        prefixes := prefixes || b.prefix;
        due := due OR b.unfolded >= FOLD_EVERY;
        plain := plain AND b.covers;
    END LOOP;
    IF cardinality(prefixes) = 0 THEN
        RETURN;
    END IF;
    IF plain AND NOT due THEN
        -- Every budget is in its period and covers the call as it stands (a fold could only
        -- give tokens back): reserved, and the hold written, in one statement.
        WITH r AS (
            UPDATE planlock_budgets x SET reserved = x.reserved + p_tokens, unfolded = x.unfolded + 1
            WHERE x.tenant = me AND x.prefix = ANY (prefixes)
            RETURNING x.prefix, x.period_start)
        INSERT INTO planlock_budget_holds (id, prefix, session_key, owner, period_start, tokens, tenant)
        SELECT p_id, r.prefix, p_key, p_owner, r.period_start, p_tokens, me FROM r;
        RETURN;
    END IF;
    -- Attempt 1 checks the budgets as they stand (the settled reservations folded in only every
    -- FOLD_EVERY reservations: they can only have given tokens back); one that looks short
    -- folds them in (attempt 2), then charges the reservations of dead workers (attempt 3).
    FOR attempt IN 1..3 LOOP
        IF attempt = 3 THEN
            -- The reservations of these budgets whose worker no longer holds its session's lease
            -- (killed, or stalled past it) are charged all they reserved: their call may have
            -- been sent (over-charged by a crash, never overspent); a late settlement corrects
            -- it. Those charged a day ago are forgotten.
            WITH gone AS (
                UPDATE planlock_budget_holds h SET state = 'charged'
                WHERE h.tenant = me AND h.state = 'held' AND h.prefix = ANY (prefixes) AND NOT EXISTS (
                    SELECT 1 FROM planlock_sessions s
                    WHERE s.session_key = h.session_key AND s.tenant = me
                      AND s.lease_owner = h.owner AND s.lease_until > now())
                RETURNING h.prefix, h.period_start, h.tokens),
            per AS (SELECT g.prefix, g.period_start, sum(g.tokens) AS n FROM gone g GROUP BY g.prefix, g.period_start)
            UPDATE planlock_budgets x SET reserved = greatest(x.reserved - per.n, 0), used = x.used + per.n
            FROM per WHERE x.tenant = me AND x.prefix = per.prefix AND x.period_start = per.period_start;
            DELETE FROM planlock_budget_holds h
            WHERE h.tenant = me AND h.state IN ('released', 'charged') AND h.prefix = ANY (prefixes)
              AND h.made_at < now() - interval '1 day';
        END IF;
        IF attempt > 1 OR due THEN
            -- The settled reservations, taken out, by the period they were made in: what each
            -- gives back, and what it charges (a hold charged whole when its worker died is
            -- corrected to what its call used).
            WITH folded AS (
                DELETE FROM planlock_budget_holds h
                WHERE h.tenant = me AND h.prefix = ANY (prefixes) AND h.state IN ('settled', 'late', 'recharged')
                RETURNING h.prefix, h.period_start, h.state, h.tokens, h.used),
            per AS (
                SELECT f.prefix, f.period_start,
                       sum(CASE WHEN f.state = 'settled' THEN f.tokens ELSE 0 END)::bigint AS back,
                       sum(greatest(coalesce(f.used, 0), 0)
                           - CASE WHEN f.state = 'recharged' THEN f.tokens ELSE 0 END)::bigint AS charged
                FROM folded f GROUP BY f.prefix, f.period_start)
            SELECT coalesce(array_agg(per.prefix), '{}'), coalesce(array_agg(per.period_start), '{}'),
                   coalesce(array_agg(per.back), '{}'), coalesce(array_agg(per.charged), '{}')
            INTO f_prefix, f_period, f_back, f_charged
            FROM per;
            folded := true;
        END IF;
        -- The first budget that cannot cover the call, as the fold and the period leave it.
        SELECT n.prefix AS p, n.tokens AS t, greatest(n.tokens - n.used - n.reserved, 0) AS l, n.reserved AS r,
               extract(epoch FROM n.period_start)::double precision + n.secs AS at
        INTO short
        FROM planlock_budget_now(me, prefixes, f_prefix, f_period, f_back, f_charged) n
        WHERE n.used + n.reserved + p_tokens > n.tokens
        ORDER BY n.prefix LIMIT 1;
        IF short.p IS NULL OR attempt = 3 OR folded THEN
            -- Written once: folded, rolled over, and reserved from when every budget covers it.
            UPDATE planlock_budgets x
            SET used = n.used, period_start = n.period_start,
                reserved = n.reserved + CASE WHEN short.p IS NULL THEN p_tokens ELSE 0 END,
                unfolded = CASE WHEN folded THEN 0 ELSE x.unfolded END + CASE WHEN short.p IS NULL THEN 1 ELSE 0 END
            FROM planlock_budget_now(me, prefixes, f_prefix, f_period, f_back, f_charged) n
            WHERE x.tenant = me AND x.prefix = n.prefix;
            -- Folded now: the arrays are spent.
            f_prefix := '{}'; f_period := '{}'; f_back := '{}'; f_charged := '{}';
        END IF;
        IF short.p IS NULL THEN
            INSERT INTO planlock_budget_holds (id, prefix, session_key, owner, period_start, tokens, tenant)
            SELECT p_id, x.prefix, p_key, p_owner, x.period_start, p_tokens, me
            FROM planlock_budgets x WHERE x.tenant = me AND x.prefix = ANY (prefixes);
            RETURN;
        END IF;
        IF attempt = 3 THEN
            -- Refused: nothing is reserved.
            prefix := short.p; tokens := short.t; left_tokens := short.l; reserved := short.r; resets_at := short.at;
            RETURN NEXT;
            RETURN;
        END IF;
    END LOOP;
END
$$;

