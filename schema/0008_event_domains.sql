-- 0008_event_domains.sql — the events table's value rules as domains instead of CHECK constraints.
--
-- Same rules, same constraint names, same SQLSTATE (23514, check_violation) for a value that
-- breaks one, whoever inserts it. (A domain's error names the domain and the constraint, not the
-- table and column.) What changes is their cost: for every INSERT statement PostgreSQL reads a
-- table's CHECK constraints back from their stored node text (`stringToNode`), plans them
-- (`expression_planner`) and prepares them for execution, so the seven of them cost ≈ 19 µs per
-- single-event append however simple they were (and merging them into one did not help). A
-- domain's constraints are kept planned in the session's type cache.
-- Measured with pgbench (prepared single-row INSERTs, no commit flush): 90 µs with the table
-- checks, 70–72 with these domains, 62–64 with neither (docs/performance.md).
--
-- Changing the columns' types rewrites `events` (and rebuilds its indexes) under an exclusive
-- lock: on a large ledger, run this migration in a maintenance window (docs/operations.md).
-- The terminal-event trigger names `event_type` in its WHEN clause, so it is dropped and made
-- again unchanged around the change.

SET client_min_messages = warning;

CREATE DOMAIN ledger_stream_id AS text COLLATE "C" CONSTRAINT events_stream_id_length CHECK (length(VALUE) BETWEEN 1 AND 256);
CREATE DOMAIN ledger_stream_version AS bigint CONSTRAINT events_stream_version_positive CHECK (VALUE > 0);
CREATE DOMAIN ledger_event_type AS text CONSTRAINT events_event_type_length CHECK (length(VALUE) BETWEEN 1 AND 128);
CREATE DOMAIN ledger_schema_version AS integer CONSTRAINT events_schema_version_positive CHECK (VALUE > 0);
CREATE DOMAIN ledger_event_data AS jsonb CONSTRAINT events_data_is_object CHECK (jsonb_typeof(VALUE) = 'object');
CREATE DOMAIN ledger_event_metadata AS jsonb CONSTRAINT events_metadata_is_object CHECK (jsonb_typeof(VALUE) = 'object');
CREATE DOMAIN ledger_hash AS bytea CONSTRAINT events_hash_length CHECK (length(VALUE) = 32);

DROP TRIGGER events_one_terminal_per_send ON events;

ALTER TABLE events
    DROP CONSTRAINT events_stream_id_length,
    DROP CONSTRAINT events_stream_version_positive,
    DROP CONSTRAINT events_event_type_length,
    DROP CONSTRAINT events_schema_version_positive,
    DROP CONSTRAINT events_data_is_object,
    DROP CONSTRAINT events_metadata_is_object,
    DROP CONSTRAINT events_hash_length,
    ALTER COLUMN stream_id TYPE ledger_stream_id,
    ALTER COLUMN stream_version TYPE ledger_stream_version,
    ALTER COLUMN event_type TYPE ledger_event_type,
    ALTER COLUMN schema_version TYPE ledger_schema_version,
    ALTER COLUMN data TYPE ledger_event_data,
    ALTER COLUMN metadata TYPE ledger_event_metadata,
    ALTER COLUMN hash TYPE ledger_hash;

CREATE TRIGGER events_one_terminal_per_send BEFORE INSERT ON events
    FOR EACH ROW WHEN (NEW.event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled'))
    EXECUTE FUNCTION ledger_refuse_second_terminal();

-- The application's role uses the types to append (PUBLIC has USAGE on new types by default, but
-- a hardened database may have revoked that).
GRANT USAGE ON DOMAIN ledger_stream_id, ledger_stream_version, ledger_event_type, ledger_schema_version,
    ledger_event_data, ledger_event_metadata, ledger_hash TO ledger_app;

-- Changing a column's type drops its statistics: gather them again now rather than when
-- autovacuum next gets to it (the rebuild's progress total and the planner both read them).
ANALYZE events;

RESET client_min_messages;
