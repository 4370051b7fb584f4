-- planlock schema version 6: the people who may decide (CONTRACT §18). Applied once, in the
-- transaction that records it.

-- One person's approval of a pause that needs several is logged as a `vote`, naming its voter:
-- one a person (the unique index), so racing deciders never count one person twice. Deciders of
-- one pause take turns on an advisory lock, so no approval is lost either. A pause's notices
-- (`paused`: it was made; `expiryNoticed`: it was seen past its expiry undecided) are logged once
-- each, by whoever sees the pause first: the log is the outbox notifications are sent from.
ALTER TABLE planlock_approval_log DROP CONSTRAINT planlock_approval_log_kind_check;
ALTER TABLE planlock_approval_log ADD CONSTRAINT planlock_approval_log_kind_check
    CHECK (kind IN ('decided', 'outcome', 'vote', 'paused', 'expiryNoticed'));
ALTER TABLE planlock_approval_log ADD COLUMN voter text
    CHECK ((kind = 'vote') = (voter IS NOT NULL));
CREATE UNIQUE INDEX planlock_approval_log_one_vote ON planlock_approval_log (session_key, pause, voter)
    WHERE kind = 'vote';
CREATE UNIQUE INDEX planlock_approval_log_one_paused ON planlock_approval_log (session_key, pause)
    WHERE kind = 'paused';
CREATE UNIQUE INDEX planlock_approval_log_one_expiry ON planlock_approval_log (session_key, pause)
    WHERE kind = 'expiryNoticed';
-- A pause's `paused` notice, kept on the session's row by the statement that writes its record;
-- the first sender that sees it, or the pause's outcome, copies it into the log.
ALTER TABLE planlock_sessions ADD COLUMN pause_notice text;
-- Notifications are read by the time they were logged, across sessions.
CREATE INDEX planlock_approval_log_recent ON planlock_approval_log USING brin (logged_at);

-- Each notification's delivery to each webhook: attempts, when to try again, and who is trying
-- now (a lease, so two senders never deliver one event to one receiver at once).
CREATE TABLE planlock_deliveries (
    session_key text NOT NULL,
    event_id text NOT NULL,
    hook text NOT NULL,
    attempts integer NOT NULL DEFAULT 0,
    next_at timestamptz NOT NULL DEFAULT now(),
    done boolean NOT NULL DEFAULT false,
    lease_owner uuid,
    lease_until timestamptz,
    PRIMARY KEY (session_key, event_id, hook)
);
