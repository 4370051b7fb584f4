-- planlock schema version 19: a reservation and its settlement plan nothing per call
-- (CONTRACT §20; issue 55's target of 1.3× the CPU of a cycle without a budget).
--
-- Measured with the fleet bench's `pg_stat_statements` (`FLEET_STATEMENTS=1`): the settlement's
-- UPDATE was planned afresh at every call (a custom plan for each array of ids), and so were
-- the three statements of a fold; the reservation locked its budgets through a cursor, a row
-- at a time. The plans these functions' statements need do not depend on their parameters (a
-- budget by tenant and prefix, a hold by id), so they are made once per connection and kept.

-- Schema 15's settlement, its holds found by their key (`= ANY`: an index scan in any plan; a
-- join with the arrays made a generic plan scan the table).
CREATE OR REPLACE FUNCTION planlock_budget_settle(p_ids uuid[], p_used bigint[]) RETURNS bigint
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    n bigint;
BEGIN
    UPDATE planlock_budget_holds h
    SET state = CASE h.state WHEN 'held' THEN 'settled' WHEN 'charged' THEN 'recharged' ELSE 'late' END,
        used = greatest(coalesce(p_used[array_position(p_ids, h.id)], 0), 0)
    WHERE h.id = ANY (p_ids) AND h.tenant = planlock_tenant() AND h.state IN ('held', 'released', 'charged');
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
ALTER FUNCTION planlock_budget_reserve_folding(uuid, text, uuid, bigint) SET plan_cache_mode = force_generic_plan;

-- Schema 17's reservation, its budgets locked in one statement (in one order, as before: the
-- sort comes before the lock).
CREATE OR REPLACE FUNCTION planlock_budget_reserve(p_id uuid, p_key text, p_owner uuid, p_tokens bigint)
RETURNS TABLE (prefix text, tokens bigint, left_tokens bigint, reserved bigint, resets_at double precision)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    me text := planlock_tenant();
    prefixes text[];
    plain boolean;
    -- How many reservations a budget takes between two folds of its settled ones (schema 15's).
    FOLD_EVERY CONSTANT integer := 32;
BEGIN
    -- Every budget covering the session, locked in one order (no two reservations wait on each
    -- other's rows), and checked as it stands.
    SELECT array_agg(b.prefix ORDER BY b.prefix), bool_and(b.covers) INTO prefixes, plain
    FROM (
        SELECT x.prefix,
               x.unfolded < FOLD_EVERY AND x.period_start >= planlock_period_start(x.period_secs)
               AND x.used + x.reserved + p_tokens <= x.tokens AS covers
        FROM planlock_budgets x
        WHERE x.tenant = me AND starts_with(p_key, x.prefix) ORDER BY x.prefix FOR UPDATE
    ) b;
    IF prefixes IS NULL THEN
        RETURN;
    END IF;
    IF NOT plain THEN
        -- A fold is due, a period is over, or a budget looks short: schema 15's path.
        RETURN QUERY SELECT * FROM planlock_budget_reserve_folding(p_id, p_key, p_owner, p_tokens);
        RETURN;
    END IF;
    -- Every budget is in its period and covers the call as it stands (a fold could only give
    -- tokens back): reserved, and the hold written, in one statement.
    WITH r AS (
        UPDATE planlock_budgets x SET reserved = x.reserved + p_tokens, unfolded = x.unfolded + 1
        WHERE x.tenant = me AND x.prefix = ANY (prefixes)
        RETURNING x.prefix, x.period_start)
    INSERT INTO planlock_budget_holds (id, prefix, session_key, owner, period_start, tokens, tenant)
    SELECT p_id, r.prefix, p_key, p_owner, r.period_start, p_tokens, me FROM r;
END
$$;
