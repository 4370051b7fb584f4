-- planlock schema version 11: token budgets that hold under concurrency (CONTRACT §20).
--
-- A budget is a number of tokens per period for the sessions of a tenant whose key starts with
-- its prefix ('' : all of them). A model call reserves its estimate from every budget that
-- covers its session, or from none: one statement, its budget rows locked in the order of their
-- prefixes, each checked (used + reserved + asked <= tokens) before any is changed, so no two
-- workers both take the last tokens. The cycle's save settles each reservation to what the
-- call used, in the save's transaction (on the reservation's own rows; the next reservation
-- folds it into the budget); a failed cycle settles alone. A reservation whose
-- worker lost the session's lease (killed, or stalled past it) is released by the next
-- reservation that finds its budget short. Periods are aligned to the Unix epoch (a day's budget resets at
-- midnight UTC); a budget row rolls over to the current period when it is next used.

CREATE TABLE planlock_budgets (
    prefix text NOT NULL,
    tokens bigint NOT NULL CHECK (tokens >= 0),
    period_secs bigint NOT NULL CHECK (period_secs > 0),
    period_start timestamptz NOT NULL DEFAULT 'epoch',
    used bigint NOT NULL DEFAULT 0,
    reserved bigint NOT NULL DEFAULT 0,
    tenant text NOT NULL DEFAULT planlock_tenant(),
    PRIMARY KEY (prefix, tenant)
);

-- One row per reservation and budget it counts against. `state`: 'held' while the call is in
-- flight; 'released' when its worker lost the lease first (kept a day, so that a late
-- settlement still charges what its call used); 'settled' (or 'late', after a release) once the
-- cycle's save has charged it `used`. A settlement touches only its own rows (the save's
-- transaction never waits on a budget); the next reservation under the budget folds the
-- settled rows into it, and they are gone.
CREATE TABLE planlock_budget_holds (
    id uuid NOT NULL,
    prefix text NOT NULL,
    session_key text NOT NULL,
    owner uuid NOT NULL,
    period_start timestamptz NOT NULL,
    tokens bigint NOT NULL,
    state text NOT NULL DEFAULT 'held',
    used bigint,
    made_at timestamptz NOT NULL DEFAULT now(),
    tenant text NOT NULL DEFAULT planlock_tenant(),
    PRIMARY KEY (id, prefix, tenant)
);
CREATE INDEX planlock_budget_holds_held ON planlock_budget_holds (prefix, tenant) WHERE state = 'held';
CREATE INDEX planlock_budget_holds_settled ON planlock_budget_holds (prefix, tenant) WHERE state IN ('settled', 'late');

ALTER TABLE planlock_budgets ENABLE ROW LEVEL SECURITY;
ALTER TABLE planlock_budgets FORCE ROW LEVEL SECURITY;
CREATE POLICY planlock_tenant ON planlock_budgets USING (tenant = planlock_tenant())
    WITH CHECK (tenant = planlock_tenant());
ALTER TABLE planlock_budget_holds ENABLE ROW LEVEL SECURITY;
ALTER TABLE planlock_budget_holds FORCE ROW LEVEL SECURITY;
CREATE POLICY planlock_tenant ON planlock_budget_holds USING (tenant = planlock_tenant())
    WITH CHECK (tenant = planlock_tenant());

-- The start of the period of `secs` seconds that holds now.
CREATE FUNCTION planlock_period_start(secs bigint) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT to_timestamp(floor(extract(epoch FROM now()) / secs) * secs)
$$;

-- Reserves `p_tokens` for reservation `p_id` of session `p_key` (whose lease `p_owner` holds)
-- from every budget covering the session, or from none. Returns no row when granted (or when
-- no budget covers the session); one row naming the first budget that cannot cover it
-- otherwise. Only then are the reservations of workers that lost their lease looked for and
-- released, and the call checked again: the common path touches the budgets, the settled
-- reservations it folds in, and one new hold.
CREATE FUNCTION planlock_budget_reserve(p_id uuid, p_key text, p_owner uuid, p_tokens bigint)
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
        WHERE h.prefix = ANY (prefixes) AND h.state IN ('settled', 'late')
        RETURNING h.prefix, h.period_start, h.state, h.tokens, h.used),
    per AS (
        SELECT f.prefix, f.period_start, sum(CASE WHEN f.state = 'settled' THEN f.tokens ELSE 0 END) AS back,
               sum(greatest(coalesce(f.used, 0), 0)) AS charged
        FROM folded f GROUP BY f.prefix, f.period_start)
    UPDATE planlock_budgets x SET reserved = greatest(x.reserved - per.back, 0), used = x.used + per.charged
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
        -- (killed, or stalled past it) are released; those released a day ago are forgotten.
        WITH gone AS (
            UPDATE planlock_budget_holds h SET state = 'released'
            WHERE h.state = 'held' AND h.prefix = ANY (prefixes) AND NOT EXISTS (
                SELECT 1 FROM planlock_sessions s
                WHERE s.session_key = h.session_key AND s.tenant = h.tenant
                  AND s.lease_owner = h.owner AND s.lease_until > now())
            RETURNING h.prefix, h.period_start, h.tokens),
        per AS (SELECT g.prefix, g.period_start, sum(g.tokens) AS n FROM gone g GROUP BY g.prefix, g.period_start)
        UPDATE planlock_budgets x SET reserved = greatest(x.reserved - per.n, 0)
        FROM per WHERE x.prefix = per.prefix AND x.period_start = per.period_start;
        DELETE FROM planlock_budget_holds h
        WHERE h.state = 'released' AND h.prefix = ANY (prefixes) AND h.made_at < now() - interval '1 day';
    END LOOP;
    INSERT INTO planlock_budget_holds (id, prefix, session_key, owner, period_start, tokens)
    SELECT p_id, x.prefix, p_key, p_owner, x.period_start, p_tokens
    FROM planlock_budgets x WHERE x.prefix = ANY (prefixes);
    UPDATE planlock_budgets x SET reserved = x.reserved + p_tokens WHERE x.prefix = ANY (prefixes);
END
$$;

-- Settles reservations `p_ids` to what their calls used (`p_used`, in the same order): each is
-- marked with what it used, for the next reservation to fold in. A reservation is settled once,
-- however often it is sent. It touches no budget: a save that settles never waits on one.
CREATE FUNCTION planlock_budget_settle(p_ids uuid[], p_used bigint[]) RETURNS bigint
LANGUAGE sql AS $$
    WITH u AS (SELECT * FROM unnest(p_ids, p_used) AS u(id, spent)),
    done AS (
        UPDATE planlock_budget_holds h
        SET state = CASE WHEN h.state = 'held' THEN 'settled' ELSE 'late' END, used = greatest(u.spent, 0)
        FROM u WHERE h.id = u.id AND h.state IN ('held', 'released')
        RETURNING 1)
    SELECT count(*) FROM done
$$;
