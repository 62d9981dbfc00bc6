-- 0014_append_key_reads.sql — the two reads every append statement makes about a stream's keys,
-- as functions, so that a layout which keeps those keys elsewhere answers them from there.
--
-- `ledger_stream_head(stream)` is a stream's last event (version, hash, recorded_at): the event
-- an append chains its hash to and stamps its `recorded_at` after. `ledger_stored_event(id)` is
-- the event with that id, if stored: an append whose id is taken stores nothing.
--
-- Here both read `events` through its unique keys, as the statements did with the subqueries
-- written out. They are plain SQL, STABLE, one SELECT each, neither STRICT nor SECURITY DEFINER:
-- the planner inlines them (Tests/LedgerStoreTests/AppendKeyReadTests.swift checks it), so the
-- plans are the same. `ops/sql/partition-events-by-time.sql` replaces them: with `events`
-- partitioned by time, a read by stream or id would probe every partition (no partition key in
-- it), so they read the unpartitioned `event_keys` instead, and an append costs the same with
-- three partitions or thirty.

CREATE FUNCTION ledger_stream_head(stream text)
RETURNS TABLE (head_version bigint, head_hash bytea, head_recorded_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT e.stream_version, e.hash, e.recorded_at FROM events AS e WHERE e.stream_id = $1
    ORDER BY e.stream_version DESC LIMIT 1
$$;

CREATE FUNCTION ledger_stored_event(id uuid) RETURNS TABLE (stored_event_id uuid)
LANGUAGE sql STABLE AS $$
    SELECT e.event_id FROM events AS e WHERE e.event_id = $1
$$;

-- Only the application's role calls them (PUBLIC may call new functions by default, but a
-- hardened database may have revoked that; without the right, the planner does not inline a
-- function and every append fails).
REVOKE ALL ON FUNCTION ledger_stream_head(text), ledger_stored_event(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_stream_head(text), ledger_stored_event(uuid) TO ledger_app;
