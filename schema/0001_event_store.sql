-- 0001_event_store.sql — the ledger's only source of truth.
--
-- events     every fact, request, answer and decision; never updated or deleted (triggers below,
--            and the application role may only INSERT and SELECT).
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
    stream_id       text COLLATE "C" NOT NULL,
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
    -- The character rules of stream ids and type names are checked by the store before it sends
    -- (a regular-expression CHECK here halved insert speed); the database keeps the bounds.
    CONSTRAINT events_stream_id_length CHECK (length(stream_id) BETWEEN 1 AND 256),
    CONSTRAINT events_stream_version_positive CHECK (stream_version > 0),
    CONSTRAINT events_event_type_length CHECK (length(event_type) BETWEEN 1 AND 128),
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
-- Reads by type. Reads by stream category (`send-%`) use the (stream_id, stream_version) index:
-- stream_id is collated "C", so a prefix LIKE is an index range.
CREATE INDEX events_type_order ON events (event_type, transaction_id, position);
-- "As of a time": recorded_at only grows with position, so a BRIN index stays tiny.
CREATE INDEX events_recorded_at ON events USING brin (recorded_at);

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

-- The canonical bytes an event's hash covers (see the header). STABLE, not IMMUTABLE: convert_to
-- is STABLE, and only a function whose body matches its declared volatility is inlined; inlined,
-- it costs microseconds, while called it is planned again on every append.
CREATE FUNCTION ledger_event_hash(
    p_previous bytea, p_stream text, p_version bigint, p_event_id uuid, p_type text, p_schema_version integer,
    p_data jsonb, p_metadata jsonb, p_occurred_at timestamptz, p_recorded_at timestamptz
) RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT sha256(coalesce(p_previous, ''::bytea) || convert_to(concat_ws(E'\n',
        p_stream, p_version::text, p_event_id::text, p_type, p_schema_version::text, p_data::text, p_metadata::text,
        (extract(epoch FROM p_occurred_at) * 1000000)::bigint::text,
        (extract(epoch FROM p_recorded_at) * 1000000)::bigint::text), 'UTF8'))
$$;

-- Raised by the store's append statement (Sources/LedgerStore/EventStore+Append.swift) when a
-- concurrent append to the same stream took some of the versions a batch needed: the statement
-- fails whole, so a batch is never stored in part.
CREATE FUNCTION ledger_batch_interrupted(p_stream text, p_inserted bigint, p_expected bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a concurrent append to stream % took versions this batch needed (% of % stored)',
        p_stream, p_inserted, p_expected USING ERRCODE = 'LE001';
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
GRANT USAGE ON SCHEMA public TO ledger_app;

RESET client_min_messages;
