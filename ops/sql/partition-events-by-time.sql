-- ops/sql/partition-events-by-time.sql — turns `events` into a table partitioned by month of
-- `recorded_at`, in one transaction, without changing a line of the ledger's code (from the
-- commit that added this script on: deploy that first).
--
--   psql "$(ops/cluster url)" -v ON_ERROR_STOP=1 -1 -f ops/sql/partition-events-by-time.sql
--
-- Not a migration: `ledger migrate` never runs it. Run it (as a superuser, with the ledger's
-- processes stopped or not: it takes an ACCESS EXCLUSIVE lock on `events` and appends wait) when
-- one table grows past what vacuum and index maintenance handle comfortably. Afterwards, add the
-- coming months' partitions ahead of time, e.g. monthly from cron:
--
--   SELECT ledger_add_event_partitions(3);   -- this month and the next three, where missing
--
-- What changes (docs/scaling.md):
-- - The existing table is kept as it is and attached as the first partition (`events_before_…`,
--   every row recorded before now, or before the latest recorded_at if later), so nothing is copied; new events go to monthly partitions
--   (`events_YYYY_MM`), and a DEFAULT partition catches anything no month covers yet.
-- - PostgreSQL keeps a partitioned table's unique keys only within each partition. The ledger's
--   three move to unpartitioned tables that a BEFORE INSERT trigger on `events` writes: the event
--   id and a stream's version to `event_keys`, one terminal event per send to `event_send_ends`.
--   Each key row also keeps its event's `recorded_at`, hash and shard key, so that the appends' two reads
--   about keys (a stream's head, whether an id is stored: the view `event_key_rows`,
--   schema/0014) are answered from `event_keys` alone: read from `events`, each would probe
--   every partition, and an append would slow down with every month added.
--   A row whose id or version is taken is skipped, as the append statements' `ON CONFLICT DO
--   NOTHING` skips it today: the store reads "nothing stored" as a conflict and decides from the
--   stream's head (Sources/LedgerStore), also where its plain inserts met 23505 before. For
--   direct SQL, an INSERT of a taken id or version stores nothing instead of failing with 23505,
--   and a second terminal event fails with LE004 (the store's error for it) instead of 23505.
-- - `position` comes from the sequence `event_positions` (an identity column cannot be the
--   partitioned table's on this PostgreSQL), continuing the numbering; the primary key becomes
--   (position, recorded_at), as a partitioned table's keys must hold the partition key.
-- - Immutability stays the database's: the row triggers are the parent's (cloned onto every
--   partition), TRUNCATE is refused on the parent and on each partition made here or by
--   ledger_add_event_partitions, and `ledger_app` keeps SELECT and INSERT on an event's own
--   columns only (none on the key tables; it reads event_keys through the view event_key_rows).

SET LOCAL client_min_messages = warning;
-- Month boundaries are UTC months whatever the session's zone.
SET LOCAL timezone = 'UTC';

LOCK TABLE events IN ACCESS EXCLUSIVE MODE;

DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'events'::regclass) = 'p' THEN
        RAISE EXCEPTION 'events is partitioned already' USING ERRCODE = 'LE200';
    END IF;
    -- The view replaced below comes from a migration; made here first, the migration would fail
    -- on it later.
    IF to_regclass('event_key_rows') IS NULL THEN
        RAISE EXCEPTION 'run ledger migrate first: schema/0014 is not applied' USING ERRCODE = 'LE200';
    END IF;
    -- The trigger that checks each event (schema/0016) and the sealer's role (0017) move over too.
    IF to_regprocedure('ledger_check_appended_event()') IS NULL OR NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ledger_sealer') THEN
        RAISE EXCEPTION 'run ledger migrate first: schema/0017 is not applied' USING ERRCODE = 'LE200';
    END IF;
    -- And the shard key the appends write and read (0021).
    IF to_regprocedure('ledger_shard_key(text,jsonb,text)') IS NULL THEN
        RAISE EXCEPTION 'run ledger migrate first: schema/0021 is not applied' USING ERRCODE = 'LE200';
    END IF;
END
$$;

-- The keys a partitioned table cannot keep.
CREATE TABLE event_keys (
    event_id        uuid PRIMARY KEY,
    stream_id       text COLLATE "C" NOT NULL,
    stream_version  bigint NOT NULL,
    recorded_at     timestamptz NOT NULL,
    hash            bytea NOT NULL,
    shard_key       text COLLATE "C",
    CONSTRAINT event_keys_stream_version_unique UNIQUE (stream_id, stream_version)
);
COMMENT ON TABLE event_keys IS
    'The unique keys of events, which a partitioned table keeps only per partition: written by the trigger events_keys.';
CREATE TABLE event_send_ends (
    stream_id       text COLLATE "C" PRIMARY KEY
);
COMMENT ON TABLE event_send_ends IS
    'One terminal event per send (SendSucceeded, SendFailed, SendCancelled): written by the trigger events_keys.';

INSERT INTO event_keys (event_id, stream_id, stream_version, recorded_at, hash, shard_key)
SELECT event_id, stream_id, stream_version, recorded_at, hash, shard_key FROM events;
INSERT INTO event_send_ends (stream_id)
SELECT stream_id FROM events WHERE event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled');

-- A taken id or version skips the row, as the append statements' ON CONFLICT DO NOTHING did on
-- events' own keys: the store then reads the head and decides (a retry, a lost race). A second
-- terminal event for a send is refused with LE004, the error the store's statements raise for it
-- (schema/0009): it arrives here only from direct SQL, or from a batch racing another writer's
-- terminal event, whose retry would be refused so anyway. (Before partitioning, the former got
-- 23505 from schema/0003's index.)
--
-- It records NEW's final values (event_keys keeps recorded_at and hash for the appends' head
-- reads), so it must stay the last BEFORE INSERT trigger on events (they fire in name order;
-- the only other, events_checked, checks the row's chain and time first: schema/0016).
--
-- SECURITY DEFINER, so that the application's role needs no right to write the key tables: a key
-- inserted without its event would block that id or version for good.
CREATE FUNCTION ledger_claim_event_keys() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public AS $$
BEGIN
    INSERT INTO event_keys (event_id, stream_id, stream_version, recorded_at, hash, shard_key)
    VALUES (NEW.event_id, NEW.stream_id, NEW.stream_version, NEW.recorded_at, NEW.hash, NEW.shard_key)
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF NEW.event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled') THEN
        INSERT INTO event_send_ends (stream_id) VALUES (NEW.stream_id) ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'send stream % already has its terminal event; % is refused', NEW.stream_id, NEW.event_type
                USING ERRCODE = 'LE004', TABLE = 'events';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

-- The appends' reads about keys (schema/0014), answered from event_keys: one index probe each,
-- however many partitions `events` has. The view reads event_keys with its owner's rights, so
-- `ledger_app` needs none on the table.
DROP VIEW event_key_rows;
CREATE VIEW event_key_rows AS
    SELECT event_id, stream_id, stream_version, recorded_at, hash, shard_key FROM event_keys;
COMMENT ON VIEW event_key_rows IS
    'The keys appends read (a stream''s head, stored ids): event_keys, since events is partitioned by time.';
REVOKE ALL ON event_key_rows FROM PUBLIC;
GRANT SELECT ON event_key_rows TO ledger_app;

-- The numbering continues where the identity left it.
CREATE SEQUENCE event_positions AS bigint;
SELECT setval('event_positions', coalesce((SELECT max(position) FROM events), 0) + 1, false);

-- The existing table becomes the first partition, as it is.
DO $$
DECLARE
    -- Now, or just after the latest recorded_at if one is ahead of now (the server's clock was
    -- stepped back since it was stamped). The BRIN index finds it.
    boundary timestamptz := greatest(clock_timestamp(),
        (SELECT max(recorded_at) + interval '1 microsecond' FROM events WHERE recorded_at > clock_timestamp() - interval '1 hour'));
    first_name text := 'events_before_' || to_char(boundary AT TIME ZONE 'UTC', 'YYYY_MM_DD_HH24MISS');
    index_name text;
BEGIN
    EXECUTE format('ALTER TABLE events RENAME TO %I', first_name);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN position DROP IDENTITY', first_name);
    EXECUTE format('DROP TRIGGER events_immutable ON %I', first_name);  -- the parent's is cloned onto it
    EXECUTE format('DROP TRIGGER events_checked ON %I', first_name);    -- likewise (schema/0016)
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT events_pkey', first_name);  -- the parent's key replaces it
    -- Its indexes keep working for it under its own name; the parent's take the old names.
    FOR index_name IN SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = first_name LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', index_name, first_name || substr(index_name, length('events') + 1));
    END LOOP;

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
        shard_key       text COLLATE "C",
        PRIMARY KEY (position, recorded_at)
    ) PARTITION BY RANGE (recorded_at);
    ALTER SEQUENCE event_positions OWNED BY events.position;

    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', first_name, boundary);
    EXECUTE format('CREATE TABLE events_%s PARTITION OF events FOR VALUES FROM (%L) TO (%L)',
                   to_char(boundary AT TIME ZONE 'UTC', 'YYYY_MM'), boundary,
                   (date_trunc('month', boundary AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC');
    EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()',
                   'events_' || to_char(boundary AT TIME ZONE 'UTC', 'YYYY_MM'));
END
$$;
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events_default FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

COMMENT ON TABLE events IS 'The ledger: immutable, append-only, partitioned by month of recorded_at. Read globally in (transaction_id, position) order.';

-- The indexes of 0001–0002 that are not keys, now on every partition (the first partition's
-- existing ones are taken over, not built again).
CREATE INDEX events_global_order ON events (transaction_id, position);
CREATE INDEX events_type_order ON events (event_type, transaction_id, position);
CREATE INDEX events_recorded_at ON events USING brin (recorded_at);
CREATE INDEX events_send_requested_device ON events ((data ->> 'device_stream_id'), position)
    WHERE event_type = 'SendRequested';
-- The keys' indexes, kept for reading: by stream, and by event id.
CREATE INDEX events_stream_version ON events (stream_id, stream_version);
CREATE INDEX events_event_id ON events (event_id);

-- The first partition's own unique indexes, now event_keys' work.
DO $$
DECLARE
    first_name text := (SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                        WHERE i.inhparent = 'events'::regclass AND c.relname LIKE 'events\_before\_%');
BEGIN
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I, DROP CONSTRAINT %I', first_name,
                   first_name || '_event_id_unique', first_name || '_stream_version_unique');
    EXECUTE format('DROP INDEX %I', first_name || '_one_terminal_per_send');
END
$$;

CREATE TRIGGER events_checked BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ledger_check_appended_event();
CREATE TRIGGER events_keys BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ledger_claim_event_keys();
CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER event_keys_immutable BEFORE UPDATE OR DELETE ON event_keys FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER event_keys_no_truncate BEFORE TRUNCATE ON event_keys FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER event_send_ends_immutable BEFORE UPDATE OR DELETE ON event_send_ends FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER event_send_ends_no_truncate BEFORE TRUNCATE ON event_send_ends FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

-- Monthly partitions: this month's and `months_ahead` more, where missing. Adding one locks
-- `events` briefly (appends wait), so the function gives up after 5 s waiting for the lock
-- (55P03; run it again). A month whose events went to the DEFAULT partition meanwhile cannot be
-- added (PostgreSQL refuses, 23514): it is skipped with a warning, and its events stay in DEFAULT.
CREATE FUNCTION ledger_add_event_partitions(months_ahead integer) RETURNS integer LANGUAGE plpgsql
SET lock_timeout = '5s' AS $$
DECLARE
    month_start timestamp := date_trunc('month', clock_timestamp() AT TIME ZONE 'UTC') - interval '1 month';
    name text;
    added integer := 0;
BEGIN
    FOR i IN 0..months_ahead LOOP
        month_start := month_start + interval '1 month';
        name := 'events_' || to_char(month_start, 'YYYY_MM');
        CONTINUE WHEN to_regclass(name) IS NOT NULL;
        BEGIN
            EXECUTE format('CREATE TABLE %I PARTITION OF events FOR VALUES FROM (%L) TO (%L)', name,
                           month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
        EXCEPTION WHEN check_violation THEN
            RAISE WARNING 'events of % are in events_default already: that month cannot be added', name;
            CONTINUE;
        END;
        EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()', name);
        added := added + 1;
    END LOOP;
    RETURN added;
END
$$;
SELECT ledger_add_event_partitions(3);

REVOKE ALL ON events, event_keys, event_send_ends, event_positions FROM PUBLIC;
GRANT SELECT ON events TO ledger_app;
GRANT INSERT (stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at,
              recorded_at, hash, shard_key) ON events TO ledger_app;
GRANT USAGE ON SEQUENCE event_positions TO ledger_app;
GRANT SELECT ON events TO ledger_sealer;

ANALYZE events, event_keys, event_send_ends;
