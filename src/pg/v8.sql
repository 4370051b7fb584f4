-- planlock schema version 8: each keyed store write is one statement (CONTRACT §13, amended),
-- so a cycle's writes travel with its session save and COMMIT in one round trip. Applied once,
-- in the transaction that records it.
--
-- Each function claims the write's key (`planlock_claim_write`: two workers writing one key at
-- once take turns), returns what an earlier write under the key returned, or checks, changes
-- and records the key, all in the caller's transaction. The checks and their messages are the
-- rules of `src/store/write.rs` (its `check_version` too), which the SQLite and
-- in-memory stores run; the conformance suite and `tests/postgres` hold the two to the same
-- answers. A refusal raises, so a COMMIT sent in the same batch rolls the cycle back:
--   PLC01  a conflict (StoreError::Conflict)
--   PLN01  something to link is not stored (StoreError::NotFound)
--   PLW01  the key's write happened, with another result than the one the cycle went on with
--          (a cycle sends its writes last, having read which of its keys are written; a
--          second worker on the same cycle is fenced before it gets here)
-- `expected` is that result for a write sent with the save, NULL for a write committed alone.

CREATE FUNCTION planlock_written(ns text, key text, done text, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF expected IS NOT NULL AND done IS DISTINCT FROM expected THEN
        RAISE EXCEPTION 'the write under key % was made before and returned `%`, not `%`', key, done, expected
            USING ERRCODE = 'PLW01';
    END IF;
    RETURN done;
END
$$;

-- A write's key claimed (`planlock_claim_write`, schema 2), and what an earlier write under it
-- returned (checked against `expected`), or NULL: the write is this one to make.
CREATE FUNCTION planlock_claim(ns text, key text, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text := planlock_claim_write(ns, key);
BEGIN
    IF done IS NULL THEN
        RETURN NULL;
    END IF;
    RETURN planlock_written(ns, key, done, expected);
END
$$;

-- DecisionWritePort::persist_decision.
CREATE FUNCTION planlock_persist_decision(
    ns text, key text, d_id text, d_root text, d_version bigint, d_text text, d_strength text,
    d_kind text, d_domain text, d_previous text, d_created text, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
    stored planlock_decisions;
    active planlock_decisions;
BEGIN
    done := planlock_claim(ns, key, expected);
    IF done IS NOT NULL THEN RETURN done; END IF;
    SELECT * INTO stored FROM planlock_decisions WHERE namespace = ns AND id = d_id;
    IF FOUND THEN
        IF (stored.root_id, stored.version, stored.text, stored.strength, stored.scope_kind,
            stored.scope_domain, stored.previous_version_id)
           IS NOT DISTINCT FROM (d_root, d_version, d_text, d_strength, d_kind, d_domain, d_previous) THEN
            INSERT INTO planlock_writes (namespace, idem_key, result) VALUES (ns, key, d_id);
            RETURN planlock_written(ns, key, d_id, expected);
        END IF;
        RAISE EXCEPTION 'decision `%` is stored with other content', d_id USING ERRCODE = 'PLC01';
    END IF;
    -- The root's active version, locked until the transaction ends.
    SELECT * INTO active FROM planlock_decisions
        WHERE namespace = ns AND root_id = d_root AND is_active LIMIT 1 FOR UPDATE;
    IF d_previous IS NULL AND active.id IS NULL AND d_version <> 1 THEN
        RAISE EXCEPTION 'decision `%` starts root `%` but has version %, not 1', d_id, d_root, d_version
            USING ERRCODE = 'PLC01';
    ELSIF d_previous IS NULL AND active.id IS NOT NULL THEN
        RAISE EXCEPTION 'decision `%` starts root `%`, which already has the active version `%`; name it as previousVersionId',
            d_id, d_root, active.id USING ERRCODE = 'PLC01';
    ELSIF d_previous IS NOT NULL AND active.id IS NOT DISTINCT FROM d_previous THEN
        IF d_version <> active.version + 1 THEN
            RAISE EXCEPTION 'decision `%` follows version % of root `%` but has version %',
                d_id, active.version, d_root, d_version USING ERRCODE = 'PLC01';
        END IF;
    ELSIF d_previous IS NOT NULL THEN
        RAISE EXCEPTION 'decision `%` follows `%`, which is not the active version of root `%`',
            d_id, d_previous, d_root USING ERRCODE = 'PLC01';
    END IF;
    IF d_previous IS NOT NULL THEN
        UPDATE planlock_decisions SET is_active = false WHERE namespace = ns AND id = d_previous AND is_active;
        IF NOT FOUND THEN
            RAISE EXCEPTION '`%` is no longer the active version', d_previous USING ERRCODE = 'PLC01';
        END IF;
    END IF;
    INSERT INTO planlock_decisions
        (namespace, id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id, created_at)
        VALUES (ns, d_id, d_root, d_version, d_text, d_strength, d_kind, d_domain, true, d_previous, d_created);
    INSERT INTO planlock_writes (namespace, idem_key, result) VALUES (ns, key, d_id);
    RETURN d_id;
END
$$;

-- DecisionWritePort::persist_evidence.
CREATE FUNCTION planlock_persist_evidence(
    ns text, key text, e_id text, e_summary text, e_source text, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
    stored planlock_evidence;
BEGIN
    done := planlock_claim(ns, key, expected);
    IF done IS NOT NULL THEN RETURN done; END IF;
    INSERT INTO planlock_evidence (namespace, id, summary, source) VALUES (ns, e_id, e_summary, e_source)
        ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        -- Stored before (under another key): the same content is the same evidence.
        SELECT * INTO stored FROM planlock_evidence WHERE namespace = ns AND id = e_id;
        IF (stored.summary, stored.source) IS DISTINCT FROM (e_summary, e_source) THEN
            RAISE EXCEPTION 'evidence `%` is stored with other content', e_id USING ERRCODE = 'PLC01';
        END IF;
    END IF;
    INSERT INTO planlock_writes (namespace, idem_key, result) VALUES (ns, key, e_id);
    RETURN e_id;
END
$$;

-- DecisionWritePort::link.
CREATE FUNCTION planlock_link(ns text, key text, decision text, evidence text, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
BEGIN
    done := planlock_claim(ns, key, expected);
    IF done IS NOT NULL THEN RETURN done; END IF;
    IF NOT EXISTS (SELECT 1 FROM planlock_decisions WHERE namespace = ns AND id = decision) THEN
        RAISE EXCEPTION 'decision `%` to link', decision USING ERRCODE = 'PLN01';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM planlock_evidence WHERE namespace = ns AND id = evidence) THEN
        RAISE EXCEPTION 'evidence `%` to link', evidence USING ERRCODE = 'PLN01';
    END IF;
    INSERT INTO planlock_decision_evidence (namespace, decision_id, evidence_id) VALUES (ns, decision, evidence)
        ON CONFLICT DO NOTHING;
    INSERT INTO planlock_writes (namespace, idem_key, result) VALUES (ns, key, 'linked');
    RETURN 'linked';
END
$$;

-- MemoryRepositoryPort::put: a memory's key is its own unique column, its id made from the key.
CREATE FUNCTION planlock_put_memory(
    ns text, key text, m_id text, m_session_ref text, m_summary text, m_keywords text, m_created text,
    expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    stored text;
BEGIN
    INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
        VALUES (ns, m_id, key, m_session_ref, m_summary, m_keywords, m_created)
        ON CONFLICT (namespace, idem_key) DO NOTHING;
    IF FOUND THEN
        RETURN m_id;
    END IF;
    SELECT id INTO stored FROM planlock_memories WHERE namespace = ns AND idem_key = key;
    RETURN planlock_written(ns, key, stored, expected);
END
$$;
