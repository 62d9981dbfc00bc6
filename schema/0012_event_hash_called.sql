-- 0012_event_hash_called.sql — ledger_event_hash (0001) as a function that is called, not inlined.
--
-- A single append to a stream the store knows nothing of (Sources/LedgerStore/
-- EventStore+AppendHashed.swift) carries the hash the store worked out for the stream's first
-- event, and computes one in the database only when the stream turns out to have events. Inlined
-- there, ledger_event_hash's whole expression is set up at every execution of the statement, used
-- or not, and that set-up cost the common case (a new stream) more than the hash would. Called
-- through PL/pgSQL, the expression is prepared once per session and set up only when it runs.
-- Same inputs, same result.

SET client_min_messages = warning;

CREATE FUNCTION ledger_event_hash_called(
    p_previous bytea, p_stream text, p_version bigint, p_event_id uuid, p_type text, p_schema_version integer,
    p_data jsonb, p_metadata jsonb, p_occurred_at timestamptz, p_recorded_at timestamptz
) RETURNS bytea LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN ledger_event_hash(p_previous, p_stream, p_version, p_event_id, p_type, p_schema_version, p_data, p_metadata,
                             p_occurred_at, p_recorded_at);
END
$$;

GRANT EXECUTE ON FUNCTION ledger_event_hash_called(bytea, text, bigint, uuid, text, integer, jsonb, jsonb, timestamptz,
                                                   timestamptz) TO ledger_app;

RESET client_min_messages;
