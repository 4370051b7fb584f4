-- planlock schema version 17: a reservation that every budget covers is two statements
-- (CONTRACT §20; issue 55's target of 1.3× the CPU of a cycle without a budget).
--
-- Schema 15's reservation read its budgets three times (to lock them, to check them, to write
-- them) through a function that folds in settled reservations even when there are none to fold.
-- Most reservations find every budget in its period, not due for a fold, and covering the call:
-- those now lock and check in one read and write the budgets and the hold in one statement.
-- Any other case takes schema 15's path unchanged: its function, renamed, is called (it locks
-- the rows this one holds already, in the same order).

ALTER FUNCTION planlock_budget_reserve(uuid, text, uuid, bigint) RENAME TO planlock_budget_reserve_folding;

CREATE FUNCTION planlock_budget_reserve(p_id uuid, p_key text, p_owner uuid, p_tokens bigint)
RETURNS TABLE (prefix text, tokens bigint, left_tokens bigint, reserved bigint, resets_at double precision)
LANGUAGE plpgsql AS $$
DECLARE
    me text := planlock_tenant();
    b record;
    prefixes text[] := '{}';
    plain boolean := true;
    -- How many reservations a budget takes between two folds of its settled ones (schema 15's).
    FOLD_EVERY CONSTANT integer := 32;
BEGIN
    -- Every budget covering the session, locked first and in one order (no two reservations
    -- wait on each other's rows), and checked as it stands.
    FOR b IN
        SELECT x.prefix,
               x.unfolded < FOLD_EVERY AND x.period_start >= planlock_period_start(x.period_secs)
               AND x.used + x.reserved + p_tokens <= x.tokens AS covers
        FROM planlock_budgets x
        WHERE x.tenant = me AND starts_with(p_key, x.prefix) ORDER BY x.prefix FOR UPDATE
    LOOP
        prefixes := prefixes || b.prefix;
        plain := plain AND b.covers;
    END LOOP;
    IF cardinality(prefixes) = 0 THEN
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
