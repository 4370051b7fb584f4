-- planlock schema version 14: every key carries the tenant (CONTRACT §20, amended).
--
-- A sharded PostgreSQL (Citus) distributes a table by one column, and every primary key and
-- unique constraint must hold it. Schema 10 made every key a key within a tenant but the
-- sequence numbers that order a table's rows; they are keys within a tenant too now, so that
-- the tables can be distributed by `tenant` (docs/CONTRACT.md, "Tenants") and a tenant's rows
-- live together. No value changes: a sequence number stays unique in the whole table.

ALTER TABLE planlock_approval_log DROP CONSTRAINT planlock_approval_log_pkey, ADD PRIMARY KEY (seq, tenant);
ALTER TABLE planlock_cycle_history DROP CONSTRAINT planlock_cycle_history_pkey, ADD PRIMARY KEY (seq, tenant);
ALTER TABLE planlock_memories DROP CONSTRAINT planlock_memories_pkey, ADD PRIMARY KEY (seq, tenant);
ALTER TABLE planlock_decisions DROP CONSTRAINT planlock_decisions_seq_key, ADD UNIQUE (seq, tenant);
ALTER TABLE planlock_decision_evidence DROP CONSTRAINT planlock_decision_evidence_seq_key, ADD UNIQUE (seq, tenant);
