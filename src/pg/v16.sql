-- planlock schema version 16: every statement names its tenant (CONTRACT §20, amended).
--
-- Row-level security showed each transaction only its tenant's rows, and the write functions
-- relied on it: they found a row by its namespace and key alone. A role that bypasses
-- row-level security, or a table whose policy an operator turned off, would then have read and
-- written across tenants. Each function's statements now name the tenant themselves
-- (`planlock_tenant()`, the transaction's), as every statement planlock sends does; row-level
-- security stays as the second wall. The functions are schema 8's to 10's otherwise unchanged.

-- Whether a row of tenant `t` is the transaction's to see: its tenant's, or every tenant's in a
-- read-only transaction of a role that reads them all (`--all-tenants`, which sets
-- `planlock.all_tenants`). What the statements planlock sends name in their WHERE.
CREATE FUNCTION planlock_mine(t text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT t = planlock_tenant() OR coalesce(current_setting('planlock.all_tenants', true), '') = 'on'
$$;

-- planlock_claim_write, as v10.sql made it.
CREATE OR REPLACE FUNCTION planlock_claim_write(ns text, key text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(planlock_tenant() || '/' || ns || '/' || key, 0));
    SELECT result INTO done FROM planlock_writes WHERE tenant = planlock_tenant() AND namespace = ns AND idem_key = key;
    RETURN done;
END
$$;

-- planlock_persist_decision, as v8.sql made it.
CREATE OR REPLACE FUNCTION planlock_persist_decision(
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
    SELECT * INTO stored FROM planlock_decisions WHERE tenant = planlock_tenant() AND namespace = ns AND id = d_id;
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
        WHERE tenant = planlock_tenant() AND namespace = ns AND root_id = d_root AND is_active LIMIT 1 FOR UPDATE;
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
        UPDATE planlock_decisions SET is_active = false WHERE tenant = planlock_tenant() AND namespace = ns AND id = d_previous AND is_active;
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

-- planlock_persist_evidence, as v8.sql made it.
CREATE OR REPLACE FUNCTION planlock_persist_evidence(
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
        SELECT * INTO stored FROM planlock_evidence WHERE tenant = planlock_tenant() AND namespace = ns AND id = e_id;
        IF (stored.summary, stored.source) IS DISTINCT FROM (e_summary, e_source) THEN
            RAISE EXCEPTION 'evidence `%` is stored with other content', e_id USING ERRCODE = 'PLC01';
        END IF;
    END IF;
    INSERT INTO planlock_writes (namespace, idem_key, result) VALUES (ns, key, e_id);
    RETURN e_id;
END
$$;

-- planlock_link, as v8.sql made it.
CREATE OR REPLACE FUNCTION planlock_link(ns text, key text, decision text, evidence text, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
BEGIN
    done := planlock_claim(ns, key, expected);
    IF done IS NOT NULL THEN RETURN done; END IF;
    IF NOT EXISTS (SELECT 1 FROM planlock_decisions WHERE tenant = planlock_tenant() AND namespace = ns AND id = decision) THEN
        RAISE EXCEPTION 'decision `%` to link', decision USING ERRCODE = 'PLN01';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM planlock_evidence WHERE tenant = planlock_tenant() AND namespace = ns AND id = evidence) THEN
        RAISE EXCEPTION 'evidence `%` to link', evidence USING ERRCODE = 'PLN01';
    END IF;
    INSERT INTO planlock_decision_evidence (namespace, decision_id, evidence_id) VALUES (ns, decision, evidence)
        ON CONFLICT DO NOTHING;
    INSERT INTO planlock_writes (namespace, idem_key, result) VALUES (ns, key, 'linked');
    RETURN 'linked';
END
$$;

-- planlock_put_memory, as v10.sql made it.
CREATE OR REPLACE FUNCTION planlock_put_memory(
    ns text, key text, m_id text, m_session_ref text, m_summary text, m_keywords text, m_created text,
    expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    stored text;
BEGIN
    INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
        VALUES (ns, m_id, key, m_session_ref, m_summary, m_keywords, m_created)
        ON CONFLICT (namespace, idem_key, tenant) DO NOTHING;
    IF FOUND THEN
        RETURN m_id;
    END IF;
    SELECT id INTO stored FROM planlock_memories WHERE tenant = planlock_tenant() AND namespace = ns AND idem_key = key;
    RETURN planlock_written(ns, key, stored, expected);
END
$$;

-- planlock_vector_model, as v9.sql made it.
CREATE OR REPLACE FUNCTION planlock_vector_model(ns text, v_model text, v_dimension integer, v bytea)
RETURNS planlock_vector_meta
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    meta planlock_vector_meta;
BEGIN
    INSERT INTO planlock_vector_meta (namespace, model, dimension) VALUES (ns, v_model, v_dimension)
        ON CONFLICT DO NOTHING;
    SELECT * INTO meta FROM planlock_vector_meta WHERE tenant = planlock_tenant() AND namespace = ns FOR UPDATE;
    IF (meta.model, meta.dimension) IS DISTINCT FROM (v_model, v_dimension) THEN
        RAISE EXCEPTION 'the store holds vectors of `%` (% dimensions), but the embedder is `%` (%); vectors of another model mean something else',
            meta.model, meta.dimension, v_model, v_dimension USING ERRCODE = 'PLC01';
    END IF;
    IF octet_length(v) <> 4 * v_dimension THEN
        RAISE EXCEPTION 'a vector of % bytes is not % numbers', octet_length(v), v_dimension USING ERRCODE = 'PLC01';
    END IF;
    RETURN meta;
END
$$;

-- planlock_put_memory_vector, as v9.sql made it.
CREATE OR REPLACE FUNCTION planlock_put_memory_vector(
    ns text, key text, m_id text, m_session_ref text, m_summary text, m_keywords text, m_created text,
    v_model text, v_dimension integer, v bytea, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    meta planlock_vector_meta := planlock_vector_model(ns, v_model, v_dimension, v);
    done text := planlock_put_memory(ns, key, m_id, m_session_ref, m_summary, m_keywords, m_created, expected);
BEGIN
    IF done = m_id THEN
        INSERT INTO planlock_memory_vectors (namespace, position, memory_id, vector)
            VALUES (ns, meta.memories + 1, m_id, v) ON CONFLICT DO NOTHING;
        IF FOUND THEN
            UPDATE planlock_vector_meta SET memories = memories + 1 WHERE tenant = planlock_tenant() AND namespace = ns;
        END IF;
    END IF;
    RETURN done;
END
$$;
