-- planlock schema version 18: an abandoned cycle is kept in the history.
--
-- Schema 5's checks named three ends of a cycle (completed, paused, failed), but a cycle also
-- ends abandoned (a pause given up or rejected), and files keep that entry. PostgreSQL refused
-- it, and the history of a session whose pause was abandoned lost that cycle. The checks now
-- name the four ends of `CycleEnd`; rows already there meet them.

ALTER TABLE planlock_cycle_history
    DROP CONSTRAINT planlock_cycle_history_outcome_check,
    ADD CONSTRAINT planlock_cycle_history_outcome_check
        CHECK (outcome IN ('completed', 'paused', 'failed', 'abandoned')) NOT VALID;
ALTER TABLE planlock_cycle_history VALIDATE CONSTRAINT planlock_cycle_history_outcome_check;

ALTER TABLE planlock_sessions
    DROP CONSTRAINT planlock_sessions_last_outcome_check,
    ADD CONSTRAINT planlock_sessions_last_outcome_check
        CHECK (last_outcome IN ('completed', 'paused', 'failed', 'abandoned')) NOT VALID;
ALTER TABLE planlock_sessions VALIDATE CONSTRAINT planlock_sessions_last_outcome_check;
