-- 0021_event_shard_key.sql — every event names the shard it would live on: `shard_key`, the app
-- and device its stream is about, so that a device's facts, the sends they cause and their
-- decision can be distributed together (docs/scaling.md, "Past one primary").
--
-- A table partitioned or distributed on a column must be given that column by the INSERT
-- itself: PostgreSQL refuses a generated column in a partition key, a column DEFAULT cannot read
-- the row's other columns, and a BEFORE ROW trigger fires after the row was routed and may not
-- move it to another partition. So the store's append statements write `shard_key`, computed in
-- the statement by `ledger_shard_key` below (Sources/LedgerStore/EventStore+Append*.swift).
--
-- The column is nullable here: events stored before this migration are immutable and keep NULL
-- (ops/sql/distribute-events-by-shard-key.sql derives theirs when it copies them). It is not part
-- of an event's hash: where an event lives is not what it says.

SET client_min_messages = warning;

-- The shard key of an event of stream `p_stream` carrying `p_data`, given `p_previous`, the key
-- of the stream's latest event (NULL for a stream's first event):
--
--   device-<app>/<device>, decision-<app>/<device>   <app>/<device>
--   skan-<app>/…                                     <app>/skan  (an app's postbacks, rare, read alone)
--   send-<uuid>                                      the key of its earlier events; for its first,
--                                                    the device its SendRequested names
--                                                    (`device_stream_id`), else the stream id
--   any other stream                                 the key of its earlier events, else the stream id
--
-- A stream's key never changes after its first event, so a stream lives on one shard. A plain
-- SQL CASE, IMMUTABLE, using `p_data` and `p_previous` once each: the planner inlines it into
-- the append statements even when they pass a sub-select for either, and evaluates those only
-- for send and other streams (device, decision and skan streams take their key from the id).
CREATE FUNCTION ledger_shard_key(p_stream text, p_data jsonb, p_previous text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN starts_with(p_stream, 'device-') OR starts_with(p_stream, 'decision-')
            THEN substr(p_stream, strpos(p_stream, '-') + 1)
        WHEN starts_with(p_stream, 'skan-')
            THEN split_part(substr(p_stream, 6), '/', 1) || '/skan'
        ELSE coalesce(p_previous,
                      CASE WHEN starts_with(p_stream, 'send-')
                           THEN substring(p_data ->> 'device_stream_id' FROM '^device-(.+)$') END,
                      p_stream)
    END
$$;
COMMENT ON FUNCTION ledger_shard_key(text, jsonb, text) IS
    'The shard key of an event: <app>/<device> for a device''s streams and its sends, <app>/skan for SKAN streams.';

ALTER TABLE events ADD COLUMN shard_key text COLLATE "C";
COMMENT ON COLUMN events.shard_key IS
    'Where the event would live if events were distributed: <app>/<device> (ledger_shard_key). NULL for events stored before schema/0021.';

-- The appends read the key of a stream's head with its version and hash (schema/0014): from
-- `events`, or on a ledger partitioned by time (ops/sql/partition-events-by-time.sql) from
-- `event_keys`, which then keeps each event's key too, written by the same trigger.
DO $$
BEGIN
    IF to_regclass('event_keys') IS NULL THEN
        CREATE OR REPLACE VIEW event_key_rows AS
            SELECT event_id, stream_id, stream_version, recorded_at, hash, shard_key FROM events;
        RETURN;
    END IF;
    ALTER TABLE event_keys ADD COLUMN shard_key text COLLATE "C";
    CREATE OR REPLACE VIEW event_key_rows AS
        SELECT event_id, stream_id, stream_version, recorded_at, hash, shard_key FROM event_keys;
    CREATE OR REPLACE FUNCTION ledger_claim_event_keys() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, public AS $body$
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
    $body$;
END
$$;

-- A send's queue row names its device's key too (its `device_stream_id`'s), so that a send
-- lives with its device's events; the store's enqueue and the queue's rebuild write it
-- (Sources/LedgerDispatch/Outbox). Rows queued before this migration keep NULL.
ALTER TABLE send_queue ADD COLUMN shard_key text COLLATE "C";
COMMENT ON COLUMN send_queue.shard_key IS
    'The device''s shard key (ledger_shard_key of device_stream_id), as its send stream''s events name it. NULL for rows queued before schema/0021.';

-- As the event's other own columns (schema/0013): the application's role writes it; SELECT on
-- events is on the whole table already (ledger_app, ledger_sealer).
GRANT INSERT (shard_key) ON events TO ledger_app;

RESET client_min_messages;
