-- 0016_checked_appends.sql — the database checks each event it is given, whoever inserts it.
--
-- Until now the rules of an event's place in its stream were kept by the store's statements
-- (they chain the hash and stamp recorded_at) and checked only afterwards, by `ledger verify`. A
-- role allowed to INSERT (ledger_app) could write an event with any recorded_at, such as one
-- back-dated before its stream's events, which `history?as_of=` then showed as history. Now a
-- trigger refuses, for every inserted row, by every path (the store's statements, COPY, SQL typed
-- by hand):
--
--   LE005  an event whose previous version in its stream is missing, or whose hash is not
--          sha256(previous event's hash || its canonical bytes) (ledger_event_hash, 0001);
--   LE006  an event whose recorded_at is before its previous event's, before the start of the
--          inserting transaction by more than the tolerance, or after the server's clock by more
--          than the tolerance (unless it only repeats the previous event's recorded_at: a stream
--          whose head was stamped ahead keeps that time until the clock passes it).
--
-- An event inserted without a hash (NULL) gets it here, chained the same way: the store's
-- statements that chain in the database leave it to this trigger rather than hash twice. One
-- given is checked (the store's single appends hash on the client).
--
-- The tolerance, 5 seconds, covers the store's own estimate of the server's clock (single appends
-- stamp recorded_at with it, Sources/LedgerStore/EventStore+AppendHashed.swift). The hash is
-- checked before the time: in a race between two appends to one stream, the loser's next row
-- finds the winner's event before it and fails LE005, which the store treats as the lost race it
-- is (as it treats LE001).
--
-- The owner of `events` can still disable the trigger; what proves history against the owner is
-- the signed seals (0015) and `ledger verify --checkpoint`. The trigger fires first of the BEFORE
-- INSERT triggers (they fire in name order; see ops/sql/partition-events-by-time.sql).

SET client_min_messages = warning;

CREATE FUNCTION ledger_check_appended_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_previous_hash bytea;
    v_previous_at timestamptz;
    v_tolerance constant interval := interval '5 seconds';
BEGIN
    IF NEW.stream_version > 1 THEN
        SELECT hash, recorded_at INTO v_previous_hash, v_previous_at FROM event_key_rows
         WHERE stream_id = NEW.stream_id AND stream_version = NEW.stream_version - 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'event % of stream % has no version % before it', NEW.stream_version, NEW.stream_id,
                NEW.stream_version - 1 USING ERRCODE = 'LE005', TABLE = 'events', COLUMN = 'stream_version';
        END IF;
    END IF;
    IF NEW.hash IS NULL THEN
        NEW.hash := ledger_event_hash(v_previous_hash, NEW.stream_id, NEW.stream_version, NEW.event_id, NEW.event_type,
                                      NEW.schema_version, NEW.data, NEW.metadata, NEW.occurred_at, NEW.recorded_at);
    ELSIF NEW.hash IS DISTINCT FROM ledger_event_hash(v_previous_hash, NEW.stream_id, NEW.stream_version, NEW.event_id,
            NEW.event_type, NEW.schema_version, NEW.data, NEW.metadata, NEW.occurred_at, NEW.recorded_at) THEN
        RAISE EXCEPTION 'event % of stream % does not chain: its hash is not that of its fields after version %''s',
            NEW.stream_version, NEW.stream_id, NEW.stream_version - 1
            USING ERRCODE = 'LE005', TABLE = 'events', COLUMN = 'hash';
    END IF;
    IF NEW.recorded_at < v_previous_at THEN
        RAISE EXCEPTION 'event % of stream % is recorded at %, before version % (%)', NEW.stream_version, NEW.stream_id,
            NEW.recorded_at, NEW.stream_version - 1, v_previous_at
            USING ERRCODE = 'LE006', TABLE = 'events', COLUMN = 'recorded_at';
    END IF;
    IF NEW.recorded_at < now() - v_tolerance THEN
        RAISE EXCEPTION 'event % of stream % is recorded at %, before its transaction began (%)', NEW.stream_version,
            NEW.stream_id, NEW.recorded_at, now()
            USING ERRCODE = 'LE006', TABLE = 'events', COLUMN = 'recorded_at';
    END IF;
    IF NEW.recorded_at > clock_timestamp() + v_tolerance AND NEW.recorded_at IS DISTINCT FROM v_previous_at THEN
        RAISE EXCEPTION 'event % of stream % is recorded at %, ahead of the server''s clock (%)', NEW.stream_version,
            NEW.stream_id, NEW.recorded_at, clock_timestamp()
            USING ERRCODE = 'LE006', TABLE = 'events', COLUMN = 'recorded_at';
    END IF;
    RETURN NEW;
END
$$;

-- Its look-up of the previous version is planned once per session; planned while `events` is
-- small (a new ledger), the plan would be a sequential scan, kept as the table grows, and every
-- insert would read the whole table. Planned without sequential scans, it is the unique index's.
ALTER FUNCTION ledger_check_appended_event() SET enable_seqscan = off;

CREATE TRIGGER events_checked BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION ledger_check_appended_event();

RESET client_min_messages;
