-- planlock schema version 10: tenants isolated by the database (CONTRACT §20). Applied once, in
-- the transaction that records it.
--
-- Every planlock table carries a tenant, filled in by its default from the transaction's
-- `planlock.tenant` setting (planlock sets it with `SET LOCAL` in the batch that begins each
-- transaction, and for the connection when it opens: `PgOptions::tenant`), and row-level
-- security, enabled and forced (its owner is held to it too), lets a statement see and write
-- only its tenant's rows. Without a tenant, the tenant is '' (a database of one tenant, as
-- before). Every key the tables had is now a key within a tenant: two tenants may each have a
-- session `s1`, and neither can learn that the other has. A role that bypasses row-level
-- security (a superuser, BYPASSRLS) sees every tenant; planlock refuses to connect with a
-- tenant as such a role.

CREATE FUNCTION planlock_tenant() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT coalesce(current_setting('planlock.tenant', true), '') $$;

-- The tenant column and the policy, on every table.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY[
        'planlock_sessions', 'planlock_memories', 'planlock_decisions', 'planlock_evidence',
        'planlock_decision_evidence', 'planlock_writes', 'planlock_approval_log',
        'planlock_cycle_history', 'planlock_deliveries', 'planlock_vector_meta',
        'planlock_memory_vectors', 'planlock_decision_vectors']
    LOOP
        -- The rows already there are the tenant '''s, whoever migrates.
        EXECUTE format('ALTER TABLE %I ADD COLUMN tenant text NOT NULL DEFAULT ''''', t);
        EXECUTE format('ALTER TABLE %I ALTER COLUMN tenant SET DEFAULT planlock_tenant()', t);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY planlock_tenant ON %I USING (tenant = planlock_tenant())
                        WITH CHECK (tenant = planlock_tenant())', t);
    END LOOP;
END
$$;

-- Keys within a tenant. The tenant is their last column: a lookup by the old key (a role that
-- bypasses row-level security adds no tenant to it) still finds its rows through the index.
ALTER TABLE planlock_decision_evidence
    DROP CONSTRAINT planlock_decision_evidence_namespace_decision_id_fkey,
    DROP CONSTRAINT planlock_decision_evidence_namespace_evidence_id_fkey;

ALTER TABLE planlock_sessions DROP CONSTRAINT planlock_sessions_pkey, ADD PRIMARY KEY (session_key, tenant);
ALTER TABLE planlock_memories
    DROP CONSTRAINT planlock_memories_namespace_id_key,
    DROP CONSTRAINT planlock_memories_namespace_idem_key_key,
    ADD UNIQUE (namespace, id, tenant),
    ADD UNIQUE (namespace, idem_key, tenant);
ALTER TABLE planlock_decisions DROP CONSTRAINT planlock_decisions_pkey, ADD PRIMARY KEY (namespace, id, tenant);
DROP INDEX planlock_decisions_one_active_per_root;
CREATE UNIQUE INDEX planlock_decisions_one_active_per_root ON planlock_decisions (namespace, root_id, tenant)
    WHERE is_active;
ALTER TABLE planlock_evidence DROP CONSTRAINT planlock_evidence_pkey, ADD PRIMARY KEY (namespace, id, tenant);
ALTER TABLE planlock_decision_evidence
    DROP CONSTRAINT planlock_decision_evidence_pkey,
    ADD PRIMARY KEY (namespace, decision_id, evidence_id, tenant),
    ADD FOREIGN KEY (namespace, decision_id, tenant) REFERENCES planlock_decisions (namespace, id, tenant),
    ADD FOREIGN KEY (namespace, evidence_id, tenant) REFERENCES planlock_evidence (namespace, id, tenant);
ALTER TABLE planlock_writes DROP CONSTRAINT planlock_writes_pkey, ADD PRIMARY KEY (namespace, idem_key, tenant);

DROP INDEX planlock_approval_log_one_decision, planlock_approval_log_one_outcome,
    planlock_approval_log_one_vote, planlock_approval_log_one_paused, planlock_approval_log_one_expiry;
CREATE UNIQUE INDEX planlock_approval_log_one_decision ON planlock_approval_log (session_key, pause, tenant)
    WHERE kind = 'decided';
CREATE UNIQUE INDEX planlock_approval_log_one_outcome ON planlock_approval_log (session_key, pause, tenant)
    WHERE kind = 'outcome';
CREATE UNIQUE INDEX planlock_approval_log_one_vote ON planlock_approval_log (session_key, pause, voter, tenant)
    WHERE kind = 'vote';
CREATE UNIQUE INDEX planlock_approval_log_one_paused ON planlock_approval_log (session_key, pause, tenant)
    WHERE kind = 'paused';
CREATE UNIQUE INDEX planlock_approval_log_one_expiry ON planlock_approval_log (session_key, pause, tenant)
    WHERE kind = 'expiryNoticed';

ALTER TABLE planlock_deliveries
    DROP CONSTRAINT planlock_deliveries_pkey, ADD PRIMARY KEY (session_key, event_id, hook, tenant);
ALTER TABLE planlock_vector_meta DROP CONSTRAINT planlock_vector_meta_pkey, ADD PRIMARY KEY (namespace, tenant);
ALTER TABLE planlock_memory_vectors
    DROP CONSTRAINT planlock_memory_vectors_pkey,
    DROP CONSTRAINT planlock_memory_vectors_namespace_memory_id_key,
    ADD PRIMARY KEY (namespace, position, tenant),
    ADD UNIQUE (namespace, memory_id, tenant);
ALTER TABLE planlock_decision_vectors
    DROP CONSTRAINT planlock_decision_vectors_pkey, ADD PRIMARY KEY (namespace, decision_id, tenant);

-- The one function that names a key in ON CONFLICT (schema 8), with the tenant's key.
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
    SELECT id INTO stored FROM planlock_memories WHERE namespace = ns AND idem_key = key;
    RETURN planlock_written(ns, key, stored, expected);
END
$$;

-- A keyed write's lock (schema 2), within the tenant: two tenants' writes never wait for each
-- other.
CREATE OR REPLACE FUNCTION planlock_claim_write(ns text, key text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    done text;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(planlock_tenant() || '/' || ns || '/' || key, 0));
    SELECT result INTO done FROM planlock_writes WHERE namespace = ns AND idem_key = key;
    RETURN done;
END
$$;
