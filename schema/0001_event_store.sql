-- 0001_event_store.sql — the ledger's only source of truth.
--
-- events     every fact, request, answer and decision; never updated or deleted (triggers below,
--            and the application role may only INSERT and SELECT).
-- streams    the head of each stream (version and last hash): what an append locks, so writers
--            to one stream are serialised and writers to different streams are not.
-- seals      periodic digests over the global order, so that dropping whole events is detected.
--
-- Hashes: each event's hash is sha256(previous hash of its stream || canonical bytes), the
-- canonical bytes being, joined by newlines: stream id, stream version, event id, type, schema
-- version, data::text, metadata::text, occurred_at and recorded_at in Unix microseconds. jsonb's
-- text form is canonical (keys ordered, spacing fixed), so the hash covers exactly what is stored.

SET client_min_messages = warning;

CREATE TABLE events (
    position        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    stream_id       text        NOT NULL,
    stream_version  bigint      NOT NULL,
    event_id        uuid        NOT NULL,
    event_type      text        NOT NULL,
    schema_version  integer     NOT NULL,
    data            jsonb       NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    occurred_at     timestamptz NOT NULL,
    recorded_at     timestamptz NOT NULL,
    hash            bytea       NOT NULL,
    CONSTRAINT events_event_id_unique UNIQUE (event_id),
    CONSTRAINT events_stream_version_unique UNIQUE (stream_id, stream_version),
    CONSTRAINT events_stream_id_valid CHECK (stream_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,255}$'),
    CONSTRAINT events_stream_version_positive CHECK (stream_version > 0),
    CONSTRAINT events_event_type_valid CHECK (event_type ~ '^[A-Za-z][A-Za-z0-9_.]{0,127}$'),
    CONSTRAINT events_schema_version_positive CHECK (schema_version > 0),
    CONSTRAINT events_data_is_object CHECK (jsonb_typeof(data) = 'object'),
    CONSTRAINT events_metadata_is_object CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT events_hash_length CHECK (length(hash) = 32)
);

COMMENT ON TABLE events IS 'The ledger: immutable, append-only. Read globally in (transaction_id, position) order.';
COMMENT ON COLUMN events.transaction_id IS
    'The writing transaction: readers take only rows below their snapshot''s xmin, so no later commit can slip behind them.';

-- Gap-safe global reads: ORDER BY transaction_id, position.
CREATE INDEX events_global_order ON events (transaction_id, position);
-- Reads by type, and by stream category (the part of the stream id before the first '-').
CREATE INDEX events_type_order ON events (event_type, transaction_id, position);
CREATE INDEX events_category_order ON events ((split_part(stream_id, '-', 1)), transaction_id, position);
-- "As of a time": recorded_at only grows with position, so a BRIN index stays tiny.
CREATE INDEX events_recorded_at ON events USING brin (recorded_at);

CREATE TABLE streams (
    stream_id     text        PRIMARY KEY,
    version       bigint      NOT NULL,
    last_hash     bytea,
    last_position bigint,
    updated_at    timestamptz NOT NULL
);
COMMENT ON TABLE streams IS 'Stream heads, derived from events; locked by each append to its stream.';

CREATE TABLE seals (
    seal_number     bigint      PRIMARY KEY,
    up_to_transaction xid8      NOT NULL,
    up_to_position  bigint      NOT NULL,
    event_count     bigint      NOT NULL,
    previous_digest bytea,
    digest          bytea       NOT NULL,
    sealed_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
COMMENT ON TABLE seals IS
    'Each seal: sha256(previous digest || the hashes of every event after the previous seal, in global order).';

-- Immutability, enforced by the database and not only by the application.
CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'LE100', TABLE = TG_TABLE_NAME;
END
$$;
CREATE TRIGGER events_immutable BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER seals_immutable BEFORE UPDATE OR DELETE ON seals
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER seals_no_truncate BEFORE TRUNCATE ON seals
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

-- The canonical bytes an event's hash covers (see the header).
CREATE FUNCTION ledger_event_hash(
    p_previous bytea, p_stream text, p_version bigint, p_event_id uuid, p_type text, p_schema_version integer,
    p_data jsonb, p_metadata jsonb, p_occurred_at timestamptz, p_recorded_at timestamptz
) RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT sha256(coalesce(p_previous, ''::bytea) || convert_to(concat_ws(E'\n',
        p_stream, p_version::text, p_event_id::text, p_type, p_schema_version::text, p_data::text, p_metadata::text,
        (extract(epoch FROM p_occurred_at) * 1000000)::bigint::text,
        (extract(epoch FROM p_recorded_at) * 1000000)::bigint::text), 'UTF8'))
$$;

-- Appends a batch of events to one stream, atomically, in one round trip.
--
-- p_expected: NULL = any version; 0 = the stream must not exist; n = the stream must be at n.
-- p_events:   a JSON array of {"event_id", "event_type", "schema_version", "data", "metadata", "occurred_at"}.
--
-- Idempotent by event id: when every id of the batch is already stored with the same content in
-- this stream, the stored rows are returned (was_duplicate = true) and nothing is written, even
-- if the stream has moved on. This check runs after the stream is locked, so a retry racing its
-- own first attempt sees that attempt's outcome.
--
-- Errors (SQLSTATE): LE001 wrong expected version (HINT = the actual version), LE002 an event id
-- already used with other content or in another stream (DETAIL names it), LE003 bad batch.
CREATE FUNCTION ledger_append(p_stream text, p_expected bigint, p_events jsonb)
RETURNS TABLE (event_position bigint, event_version bigint, event_transaction_id xid8,
               event_recorded_at timestamptz, event_hash bytea, was_duplicate boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_count    integer;
    v_version  bigint;
    v_hash     bytea;
    v_now      timestamptz := clock_timestamp();
    v_found    integer;
    v_matching integer;
    v_ids      uuid[];
    v_versions bigint[] := '{}';
    v_hashes   bytea[] := '{}';
    v_event    jsonb;
    v_id       uuid;
BEGIN
    IF jsonb_typeof(p_events) IS DISTINCT FROM 'array' OR jsonb_array_length(p_events) = 0 THEN
        RAISE EXCEPTION 'an append needs a non-empty array of events' USING ERRCODE = 'LE003';
    END IF;
    v_count := jsonb_array_length(p_events);
    SELECT array_agg((e->>'event_id')::uuid ORDER BY n) INTO v_ids
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS t(e, n);
    IF (SELECT count(DISTINCT id) FROM unnest(v_ids) AS id) <> v_count THEN
        RAISE EXCEPTION 'an event id appears twice in one batch' USING ERRCODE = 'LE003';
    END IF;

    -- Lock the stream's head (creating it if new).
    INSERT INTO streams AS s (stream_id, version, updated_at) VALUES (p_stream, 0, v_now)
        ON CONFLICT (stream_id) DO NOTHING;
    SELECT s.version, s.last_hash INTO v_version, v_hash FROM streams AS s WHERE s.stream_id = p_stream FOR UPDATE;

    -- Idempotency: is any of these ids stored already?
    SELECT count(*),
           count(*) FILTER (WHERE ev.stream_id = p_stream
                              AND ev.event_type = x.e->>'event_type'
                              AND ev.schema_version = (x.e->>'schema_version')::integer
                              AND ev.data = x.e->'data'
                              AND ev.metadata = coalesce(x.e->'metadata', '{}'::jsonb)
                              AND ev.occurred_at = (x.e->>'occurred_at')::timestamptz)
        INTO v_found, v_matching
        FROM jsonb_array_elements(p_events) AS x(e)
        JOIN events AS ev ON ev.event_id = (x.e->>'event_id')::uuid;
    IF v_found > 0 THEN
        IF v_found = v_count AND v_matching = v_count THEN
            RETURN QUERY
                SELECT ev.position, ev.stream_version, ev.transaction_id, ev.recorded_at, ev.hash, true
                FROM events AS ev WHERE ev.event_id = ANY (v_ids) ORDER BY ev.stream_version;
            RETURN;
        END IF;
        SELECT ev.event_id INTO v_id
            FROM jsonb_array_elements(p_events) AS x(e)
            JOIN events AS ev ON ev.event_id = (x.e->>'event_id')::uuid
            WHERE NOT (ev.stream_id = p_stream AND ev.event_type = x.e->>'event_type'
                       AND ev.schema_version = (x.e->>'schema_version')::integer AND ev.data = x.e->'data'
                       AND ev.metadata = coalesce(x.e->'metadata', '{}'::jsonb)
                       AND ev.occurred_at = (x.e->>'occurred_at')::timestamptz)
            LIMIT 1;
        RAISE EXCEPTION 'event id % was already appended with other content', coalesce(v_id, v_ids[1])
            USING ERRCODE = 'LE002', DETAIL = coalesce(v_id, v_ids[1])::text;
    END IF;

    IF p_expected IS NOT NULL AND p_expected <> v_version THEN
        RAISE EXCEPTION 'stream % is at version %, not the expected %', p_stream, v_version, p_expected
            USING ERRCODE = 'LE001', HINT = v_version::text;
    END IF;

    -- Chain the hashes, then insert the whole batch in one statement.
    FOR v_event IN SELECT e FROM jsonb_array_elements(p_events) AS t(e) LOOP
        v_version := v_version + 1;
        v_hash := ledger_event_hash(v_hash, p_stream, v_version, (v_event->>'event_id')::uuid,
                                    v_event->>'event_type', (v_event->>'schema_version')::integer, v_event->'data',
                                    coalesce(v_event->'metadata', '{}'::jsonb),
                                    (v_event->>'occurred_at')::timestamptz, v_now);
        v_versions := v_versions || v_version;
        v_hashes := v_hashes || v_hash;
    END LOOP;

    RETURN QUERY
    WITH inserted AS (
        INSERT INTO events (stream_id, stream_version, event_id, event_type, schema_version, data, metadata,
                            occurred_at, recorded_at, hash)
        SELECT p_stream, v_versions[x.n], (x.e->>'event_id')::uuid, x.e->>'event_type',
               (x.e->>'schema_version')::integer, x.e->'data', coalesce(x.e->'metadata', '{}'::jsonb),
               (x.e->>'occurred_at')::timestamptz, v_now, v_hashes[x.n]
        FROM jsonb_array_elements(p_events) WITH ORDINALITY AS x(e, n)
        ORDER BY x.n
        RETURNING events.position, events.stream_version, events.transaction_id, events.recorded_at, events.hash
    )
    SELECT i.position, i.stream_version, i.transaction_id, i.recorded_at, i.hash, false FROM inserted AS i
    ORDER BY i.stream_version;

    UPDATE streams AS s SET version = v_version, last_hash = v_hash,
           last_position = (SELECT max(ev.position) FROM events AS ev WHERE ev.stream_id = p_stream AND ev.stream_version = v_version),
           updated_at = v_now
        WHERE s.stream_id = p_stream;
    PERFORM pg_notify('ledger_events', '');
END
$$;

-- The application's role: it may append and read the log, never change it.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ledger_app') THEN
        BEGIN
            CREATE ROLE ledger_app NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- another database of this cluster created it at the same moment
        END;
    END IF;
END
$$;
REVOKE ALL ON events, seals FROM PUBLIC;
GRANT SELECT, INSERT ON events, seals TO ledger_app;
GRANT SELECT, INSERT, UPDATE ON streams TO ledger_app;
GRANT USAGE ON SCHEMA public TO ledger_app;

RESET client_min_messages;
