-- planlock schema version 15: a reservation writes its budgets once, and names its tenant
-- (CONTRACT §20, amended).
--
-- A cycle reserves once, at its start (with its memory search's reads): the reservation is then
-- most of what a budget costs a cycle, and every reservation under a budget waits for its row.
-- Schema 13's function wrote that row twice (the settled reservations folded in, then the new
-- one added) and looked for the settled reservations without an index (its partial index left
-- out 'recharged'). Now the row is written once: folded, rolled over and reserved together;
-- the settled reservations are folded in every 32 reservations (`unfolded` counts them), or
-- when the budget looks short (a settled reservation only gives tokens back, so a budget that
-- covers a call before the fold covers it after), and read by an index. Every statement names
-- the tenant (`planlock_tenant()`) besides row-level security.

DROP INDEX planlock_budget_holds_settled;
CREATE INDEX planlock_budget_holds_settled ON planlock_budget_holds (prefix, tenant)
    WHERE state IN ('settled', 'late', 'recharged');

-- Budgets `prefixes` of tenant `me` as a reservation sees them: with the settled reservations
-- folded in (given as arrays by budget and period: what each gives back and charges), and a
-- period that is over begun again.
-- Reservations since the budget's settled ones were last folded in.
ALTER TABLE planlock_budgets ADD COLUMN unfolded integer NOT NULL DEFAULT 0;

CREATE FUNCTION planlock_budget_now(me text, prefixes text[], f_prefix text[], f_period timestamptz[],
                                    f_back bigint[], f_charged bigint[])
RETURNS TABLE (prefix text, tokens bigint, used bigint, reserved bigint, period_start timestamptz, secs bigint)
LANGUAGE sql STABLE AS $$
    SELECT x.prefix, x.tokens,
           CASE WHEN x.period_start < planlock_period_start(x.period_secs) THEN 0
                ELSE greatest(x.used + coalesce(f.charged, 0), 0) END,
           CASE WHEN x.period_start < planlock_period_start(x.period_secs) THEN 0
                ELSE greatest(x.reserved - coalesce(f.back, 0), 0) END,
           greatest(x.period_start, planlock_period_start(x.period_secs)), x.period_secs
    FROM planlock_budgets x
    LEFT JOIN unnest(f_prefix, f_period, f_back, f_charged) AS f(prefix, period_start, back, charged)
      ON f.prefix = x.prefix AND f.period_start = x.period_start
    WHERE x.tenant = me AND x.prefix = ANY (prefixes)
$$;

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
    -- How many reservations a budget takes between two folds of its settled ones.
    FOLD_EVERY CONSTANT integer := 32;
BEGIN
    -- Every budget covering the session, locked first and in one order (no two reservations
    -- wait on each other's rows).
    FOR b IN
        SELECT x.prefix, x.unfolded FROM planlock_budgets x
        WHERE x.tenant = me AND starts_with(p_key, x.prefix) ORDER BY x.prefix FOR UPDATE
    LOOP
        prefixes := prefixes || b.prefix;
        due := due OR b.unfolded >= FOLD_EVERY;
    END LOOP;
    IF cardinality(prefixes) = 0 THEN
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

-- Settles reservations `p_ids` to what their calls used (`p_used`, in the same order), as schema
-- 13's, naming the tenant. In PL/pgSQL, whose statement plans a session keeps: a SQL function
-- that cannot be inlined is planned again at every call (measured: 61 µs a call against 43).
CREATE OR REPLACE FUNCTION planlock_budget_settle(p_ids uuid[], p_used bigint[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    WITH u AS (SELECT * FROM unnest(p_ids, p_used) AS u(id, spent)),
    done AS (
        UPDATE planlock_budget_holds h
        SET state = CASE h.state WHEN 'held' THEN 'settled' WHEN 'charged' THEN 'recharged' ELSE 'late' END,
            used = greatest(u.spent, 0)
        FROM u WHERE h.tenant = planlock_tenant() AND h.id = u.id AND h.state IN ('held', 'released', 'charged')
        RETURNING 1)
    SELECT count(*) INTO n FROM done;
    RETURN n;
END
$$;
