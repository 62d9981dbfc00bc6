-- 0002_projections.sql — where projections keep their place in the log.
--
-- projection_checkpoints  one row per projection: the code version its tables were built with and
--                         the (transaction_id, position) pair up to which it has applied the log.
--                         A projection's state change and its new checkpoint commit together, so
--                         every event is applied exactly once across crashes.
--
-- The projections' own tables are created by their code (Sources/LedgerProjections), because
-- their shape belongs to a projection version: a rebuild after a fix builds the new shape into
-- shadow tables and swaps them in, in one transaction.

SET client_min_messages = warning;

CREATE TABLE projection_checkpoints (
    name                    text COLLATE "C" PRIMARY KEY,
    version                 integer     NOT NULL CHECK (version > 0),
    transaction_id          xid8        NOT NULL DEFAULT '0',
    position                bigint      NOT NULL DEFAULT 0,
    events_applied          bigint      NOT NULL DEFAULT 0,
    last_event_recorded_at  timestamptz,
    updated_at              timestamptz NOT NULL DEFAULT clock_timestamp(),
    rebuilt_at              timestamptz,
    CONSTRAINT projection_checkpoints_name CHECK (name ~ '^[a-z][a-z0-9_]{0,40}$')
);
COMMENT ON TABLE projection_checkpoints IS
    'Each projection''s place in the global log (gap-safe order), and the version of the code that built its tables.';

-- "As of" for one device replays its stream and the sends requested for it: find those sends
-- without scanning the log (a partial expression index; SendRequested is a small share of events).
CREATE INDEX events_send_requested_device ON events ((data ->> 'device_stream_id'), position)
    WHERE event_type = 'SendRequested';

GRANT SELECT, INSERT, UPDATE ON projection_checkpoints TO ledger_app;

RESET client_min_messages;
