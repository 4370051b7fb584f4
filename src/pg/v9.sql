-- planlock schema version 9: retrieval by meaning on PostgreSQL (CONTRACT §20; the provider
-- `postgres-semantic`, `src/store/postgres/meaning.rs`). Applied once, in the transaction that
-- records it.
--
-- Each memory and decision written by the provider has its vector beside it, as little-endian
-- f32 bytes, written by the same statement as the row (so in the same transaction: a cycle's
-- writes travel with its save). A namespace's vectors are of one embedder, pinned in
-- `planlock_vector_meta` by the first write; a write with another raises PLC01.
--
-- A memory's vector has a position, 1, 2, … in its namespace, given under the lock of the
-- namespace's meta row (taken first by every vector write, held to COMMIT): positions are dense
-- and in commit order, so a worker that holds the vectors up to position n reads only those
-- after n, and the meta row's count says how many there are.

CREATE TABLE planlock_vector_meta (
    namespace text PRIMARY KEY,
    model text NOT NULL,
    dimension integer NOT NULL,
    memories bigint NOT NULL DEFAULT 0
);

CREATE TABLE planlock_memory_vectors (
    namespace text NOT NULL,
    position bigint NOT NULL,
    memory_id text NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (namespace, position),
    UNIQUE (namespace, memory_id)
);

CREATE TABLE planlock_decision_vectors (
    namespace text NOT NULL,
    decision_id text NOT NULL,
    vector bytea NOT NULL,
    PRIMARY KEY (namespace, decision_id)
);

-- The namespace's embedder, recorded by its first vector write and locked to COMMIT; another
-- embedder (or a vector of another length) is refused.
CREATE FUNCTION planlock_vector_model(ns text, v_model text, v_dimension integer, v bytea)
RETURNS planlock_vector_meta
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    meta planlock_vector_meta;
BEGIN
    INSERT INTO planlock_vector_meta (namespace, model, dimension) VALUES (ns, v_model, v_dimension)
        ON CONFLICT DO NOTHING;
    SELECT * INTO meta FROM planlock_vector_meta WHERE namespace = ns FOR UPDATE;
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

-- MemoryRepositoryPort::put with the memory's vector.
CREATE FUNCTION planlock_put_memory_vector(
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
            UPDATE planlock_vector_meta SET memories = memories + 1 WHERE namespace = ns;
        END IF;
    END IF;
    RETURN done;
END
$$;

-- DecisionWritePort::persist_decision with the decision's vector.
CREATE FUNCTION planlock_persist_decision_vector(
    ns text, key text, d_id text, d_root text, d_version bigint, d_text text, d_strength text,
    d_kind text, d_domain text, d_previous text, d_created text,
    v_model text, v_dimension integer, v bytea, expected text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    meta planlock_vector_meta := planlock_vector_model(ns, v_model, v_dimension, v);
    done text := planlock_persist_decision(
        ns, key, d_id, d_root, d_version, d_text, d_strength, d_kind, d_domain, d_previous, d_created, expected);
BEGIN
    IF done = d_id THEN
        INSERT INTO planlock_decision_vectors (namespace, decision_id, vector) VALUES (ns, d_id, v)
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN done;
END
$$;
