-- planlock schema version 12: the rules live with the sessions (CONTRACT §18, amended).
--
-- A tenant's access file (who may decide on its pauses, N-of-M, its webhooks), installed once
-- with `planlock access install --database URL [--tenant T]`: every path that decides or acts
-- on the tenant's sessions reads it from here, so no caller has to remember a flag. One row a
-- tenant, its text as written (at most 1 MiB); protected by row-level security like every
-- planlock table.

CREATE TABLE planlock_access (
    tenant text NOT NULL DEFAULT planlock_tenant(),
    body text NOT NULL CHECK (octet_length(body) <= 1048576),
    installed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant)
);

ALTER TABLE planlock_access ENABLE ROW LEVEL SECURITY;
ALTER TABLE planlock_access FORCE ROW LEVEL SECURITY;
CREATE POLICY planlock_tenant ON planlock_access USING (tenant = planlock_tenant())
    WITH CHECK (tenant = planlock_tenant());
