-- ops/sql/distribute-events-by-shard-key.sql — turns `events` and `send_queue` into tables
-- hash-partitioned on `shard_key` (the app and device of each event and send, schema/0021), with
-- the unique keys of the Citus distribution design (docs/scaling.md, "Past one primary"), in one
-- transaction.
--
--   psql "$(ops/cluster url)" -v ON_ERROR_STOP=1 -1 -f ops/sql/distribute-events-by-shard-key.sql
--
-- Not a migration, and not a production layout: `ledger migrate` never runs it, and one server
-- gains nothing from hash partitions. It is the check, on plain PostgreSQL, that the ledger keeps
-- working under the rule Citus imposes on a distributed table, the same rule PostgreSQL imposes on
-- a partitioned one: a unique key holds only if it includes the distribution (partition) key.
-- The test suite's store tests run on it (`LEDGER_TEST_EVENTS_SHARDED=1`, ops/test).
--
-- What changes:
-- - `events` is hash-partitioned on `shard_key` into four partitions (`events_shard_0` … `_3`),
--   `shard_key` NOT NULL: an INSERT that does not name the key fails, as it would on Citus.
-- - The keys are the design's: primary key (shard_key, position), UNIQUE (shard_key, event_id),
--   UNIQUE (shard_key, stream_id, stream_version), one terminal event per send on
--   (shard_key, stream_id). A stream has one shard key, so the last two hold as before. An event
--   id is unique per shard key only: the database no longer refuses an id stored on another
--   device. The append statements still read whether an id is stored anywhere before inserting
--   (the view `event_key_rows`), so a retry is told from a clash, but two appends racing with one
--   id to two devices can both be stored.
-- - `position` continues from a sequence (`event_positions`; this PostgreSQL has no identity
--   columns on partitioned tables). The appends' reads by stream or id, which do not name the
--   shard key, use plain indexes on (stream_id, stream_version) and (event_id) in every
--   partition: each probes four partitions.
-- - The rows are copied. Events stored before schema/0021 have no shard key; each event here
--   takes its stream's first event's key (stored, or derived by ledger_shard_key), so a stream's
--   events stay together. The key is not part of an event's hash: every hash and every seal is
--   still valid.
-- - Immutability, the checks of each inserted event (schema/0016) and the application's rights
--   (SELECT, and INSERT on an event's own columns and `shard_key`) are as before.
-- - `send_queue` likewise (four partitions, co-located with `events` by the same key and
--   modulus): primary key (shard_key, send_id), UNIQUE (shard_key, stream_id), plain indexes on
--   send_id and stream_id for the worker's reads, which name no shard key. Rows queued before
--   schema/0021 get their device's key here.

SET LOCAL client_min_messages = warning;

LOCK TABLE events, send_queue IN ACCESS EXCLUSIVE MODE;

DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'events'::regclass) = 'p'
       OR (SELECT relkind FROM pg_class WHERE oid = 'send_queue'::regclass) = 'p' THEN
        RAISE EXCEPTION 'events is partitioned already' USING ERRCODE = 'LE200';
    END IF;
    IF to_regprocedure('ledger_shard_key(text,jsonb,text)') IS NULL THEN
        RAISE EXCEPTION 'run ledger migrate first: schema/0021 is not applied' USING ERRCODE = 'LE200';
    END IF;
END
$$;

-- The view of keys the appends read depends on the table; it is made again below.
DROP VIEW event_key_rows;
ALTER TABLE events RENAME TO events_unsharded;
-- Its indexes' names go to the new table's.
DO $$
DECLARE
    index_name text;
BEGIN
    FOR index_name IN SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'events_unsharded' LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', index_name, 'events_unsharded' || substr(index_name, length('events') + 1));
    END LOOP;
END
$$;

CREATE SEQUENCE event_positions AS bigint;
SELECT setval('event_positions', coalesce((SELECT max(position) FROM events_unsharded), 0) + 1, false);

CREATE TABLE events (
    position        bigint NOT NULL DEFAULT nextval('event_positions'),
    transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
    stream_id       ledger_stream_id NOT NULL,
    stream_version  ledger_stream_version NOT NULL,
    event_id        uuid NOT NULL,
    event_type      ledger_event_type NOT NULL,
    schema_version  ledger_schema_version NOT NULL,
    data            ledger_event_data NOT NULL,
    metadata        ledger_event_metadata NOT NULL DEFAULT '{}',
    occurred_at     timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL,
    hash            ledger_hash NOT NULL,
    shard_key       text COLLATE "C" NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (shard_key, position),
    CONSTRAINT events_event_id_unique UNIQUE (shard_key, event_id),
    CONSTRAINT events_stream_version_unique UNIQUE (shard_key, stream_id, stream_version)
) PARTITION BY HASH (shard_key);
ALTER SEQUENCE event_positions OWNED BY events.position;
COMMENT ON TABLE events IS
    'The ledger: immutable, append-only, hash-partitioned on shard_key (<app>/<device>). Read globally in (transaction_id, position) order.';

DO $$
BEGIN
    FOR remainder IN 0..3 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES WITH (MODULUS 4, REMAINDER %s)',
                       'events_shard_' || remainder, remainder);
        EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()',
                       'events_shard_' || remainder);
    END LOOP;
END
$$;

-- Before the triggers: the copied events were checked when they were appended, and their
-- recorded_at lies before this transaction.
INSERT INTO events (position, transaction_id, stream_id, stream_version, event_id, event_type, schema_version, data,
                    metadata, occurred_at, recorded_at, hash, shard_key)
SELECT position, transaction_id, stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
       occurred_at, recorded_at, hash,
       first_value(coalesce(shard_key, ledger_shard_key(stream_id, data, NULL)))
           OVER (PARTITION BY stream_id ORDER BY stream_version)
FROM events_unsharded;

DO $$
BEGIN
    IF (SELECT count(*) FROM events) <> (SELECT count(*) FROM events_unsharded) THEN
        RAISE EXCEPTION 'the copy of events is incomplete' USING ERRCODE = 'LE200';
    END IF;
END
$$;
DROP TABLE events_unsharded;

-- The indexes of 0001–0003 that are not keys, and plain indexes for the reads by stream, by id
-- and by position, which do not name the shard key.
CREATE INDEX events_global_order ON events (transaction_id, position);
CREATE INDEX events_type_order ON events (event_type, transaction_id, position);
CREATE INDEX events_recorded_at ON events USING brin (recorded_at);
CREATE INDEX events_send_requested_device ON events ((data ->> 'device_stream_id'), position)
    WHERE event_type = 'SendRequested';
CREATE INDEX events_stream_version ON events (stream_id, stream_version);
CREATE INDEX events_event_id ON events (event_id);
CREATE INDEX events_position ON events (position);
-- One terminal event per send (schema/0003), within the send's shard key, which is its stream's.
CREATE UNIQUE INDEX events_one_terminal_per_send ON events (shard_key, stream_id)
    WHERE event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled');

CREATE TRIGGER events_checked BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ledger_check_appended_event();
CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

-- The appends' reads about keys (schema/0014, 0021), from events itself as before.
CREATE VIEW event_key_rows AS
    SELECT event_id, stream_id, stream_version, recorded_at, hash, shard_key FROM events;
COMMENT ON VIEW event_key_rows IS
    'The keys appends read (a stream''s head, stored ids): events itself.';

REVOKE ALL ON events, event_positions, event_key_rows FROM PUBLIC;
GRANT SELECT ON events, event_key_rows TO ledger_app;
GRANT INSERT (stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at,
              recorded_at, hash, shard_key) ON events TO ledger_app;
GRANT USAGE ON SEQUENCE event_positions TO ledger_app;
GRANT SELECT ON events TO ledger_sealer;

-- The queue: its rows are the worker's state, not history, so they are updated in place, and
-- each keeps its device's key (a row's key never changes: the device of a send does not).
ALTER TABLE send_queue RENAME TO send_queue_unsharded;
DO $$
DECLARE
    index_name text;
BEGIN
    FOR index_name IN SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'send_queue_unsharded' LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', index_name,
                       'send_queue_unsharded' || substr(index_name, length('send_queue') + 1));
    END LOOP;
END
$$;
UPDATE send_queue_unsharded SET shard_key = ledger_shard_key(device_stream_id, '{}', NULL) WHERE shard_key IS NULL;

CREATE TABLE send_queue (
    LIKE send_queue_unsharded INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    CONSTRAINT send_queue_pkey PRIMARY KEY (shard_key, send_id),
    CONSTRAINT send_queue_stream_id_key UNIQUE (shard_key, stream_id)
) PARTITION BY HASH (shard_key);
COMMENT ON TABLE send_queue IS
    'Pending and running sends only; history lives in events (send-<uuid> streams). Hash-partitioned on shard_key, as events.';
DO $$
BEGIN
    FOR remainder IN 0..3 LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF send_queue FOR VALUES WITH (MODULUS 4, REMAINDER %s)',
                       'send_queue_shard_' || remainder, remainder);
    END LOOP;
END
$$;
INSERT INTO send_queue SELECT * FROM send_queue_unsharded;
DROP TABLE send_queue_unsharded;

CREATE INDEX send_queue_due ON send_queue (not_before, enqueued_position) WHERE state = 'pending';
CREATE INDEX send_queue_lane ON send_queue (lane, enqueued_position) WHERE lane IS NOT NULL;
CREATE INDEX send_queue_running ON send_queue (lease_expires_at) WHERE state = 'running';
CREATE INDEX send_queue_parked ON send_queue (enqueued_position) WHERE state = 'parked';
CREATE INDEX send_queue_device ON send_queue (device_stream_id);
CREATE INDEX send_queue_send_id ON send_queue (send_id);
CREATE INDEX send_queue_stream_id ON send_queue (stream_id);

REVOKE ALL ON send_queue FROM PUBLIC;
GRANT SELECT, INSERT, UPDATE, DELETE ON send_queue TO ledger_app;

ANALYZE events, send_queue;
