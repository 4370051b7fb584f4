-- planlock schema version 1. Applied once, in the transaction that records it.

-- One row per session key: the session state and its records as the JSON text the file store
-- writes (read back strictly), the compare-and-set version, and the lease.
CREATE TABLE planlock_sessions (
    session_key text PRIMARY KEY CHECK (octet_length(session_key) BETWEEN 1 AND 256),
    state text,
    intervention text,
    reserved text,
    pin text,
    row_version bigint NOT NULL DEFAULT 0,
    lease_owner uuid,
    lease_until timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Memories, decisions, evidence and links, each in a namespace (by default the session key:
-- what one session root's SQLite database holds).
CREATE TABLE planlock_memories (
    seq bigserial PRIMARY KEY,
    namespace text NOT NULL,
    id text NOT NULL,
    idem_key text NOT NULL,
    session_ref text NOT NULL,
    summary text NOT NULL,
    keywords text NOT NULL,
    created_at text NOT NULL,
    search tsvector GENERATED ALWAYS AS (to_tsvector('simple', summary || ' ' || keywords)) STORED,
    UNIQUE (namespace, id),
    UNIQUE (namespace, idem_key)
);
CREATE INDEX planlock_memories_search ON planlock_memories USING gin (search);

CREATE TABLE planlock_decisions (
    seq bigserial UNIQUE,
    namespace text NOT NULL,
    id text NOT NULL,
    root_id text NOT NULL,
    version bigint NOT NULL,
    text text NOT NULL,
    strength text NOT NULL,
    scope_kind text NOT NULL CHECK (scope_kind IN ('global', 'axis', 'domain')),
    scope_domain text,
    is_active boolean NOT NULL,
    previous_version_id text,
    created_at text NOT NULL,
    PRIMARY KEY (namespace, id)
);
-- One active version per root: the rule, held by the database.
CREATE UNIQUE INDEX planlock_decisions_one_active_per_root ON planlock_decisions (namespace, root_id) WHERE is_active;

CREATE TABLE planlock_evidence (
    namespace text NOT NULL,
    id text NOT NULL,
    summary text NOT NULL,
    source text NOT NULL,
    PRIMARY KEY (namespace, id)
);

CREATE TABLE planlock_decision_evidence (
    seq bigserial UNIQUE,
    namespace text NOT NULL,
    decision_id text NOT NULL,
    evidence_id text NOT NULL,
    PRIMARY KEY (namespace, decision_id, evidence_id),
    FOREIGN KEY (namespace, decision_id) REFERENCES planlock_decisions (namespace, id),
    FOREIGN KEY (namespace, evidence_id) REFERENCES planlock_evidence (namespace, id)
);

-- What each keyed write returned, so a write again under its key writes nothing.
CREATE TABLE planlock_writes (
    namespace text NOT NULL,
    idem_key text NOT NULL,
    result text NOT NULL,
    PRIMARY KEY (namespace, idem_key)
);
