-- planlock schema version 6: approvals by more than one person (CONTRACT §18). Applied once, in
-- the transaction that records it.

-- One person's approval of a pause that needs several is logged as a `vote`, naming its voter:
-- one a person (the unique index), so racing deciders never count one person twice. Deciders of
-- one pause take turns on an advisory lock, so no approval is lost either.
ALTER TABLE planlock_approval_log DROP CONSTRAINT planlock_approval_log_kind_check;
ALTER TABLE planlock_approval_log ADD CONSTRAINT planlock_approval_log_kind_check
    CHECK (kind IN ('decided', 'outcome', 'vote'));
ALTER TABLE planlock_approval_log ADD COLUMN voter text
    CHECK ((kind = 'vote') = (voter IS NOT NULL));
CREATE UNIQUE INDEX planlock_approval_log_one_vote ON planlock_approval_log (session_key, pause, voter)
    WHERE kind = 'vote';
