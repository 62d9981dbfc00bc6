-- 0018_send_queue_gates.sql — the send worker's append conditions as functions of the queue.
--
-- A conditional append (EventStore.append(_:where:on:), Sources/LedgerStore) appends only to the
-- streams a gate function returns, in the same statement: the gate and the events commit together
-- or not at all, so a try whose lease was lost appends nothing. The store calls a gate by name with
-- bound arguments; the queue's SQL stays here, beside the queue (0003, 0006), not in the store.
--
-- p_tries is a JSON array of the worker's tries, `[{"send_id", "attempt", "retry_at"?,
-- "uncalled"?}]` (SendQueue.swift); p_owner the worker's lease owner.

SET client_min_messages = warning;

-- The tries whose claims still hold (same attempt, same owner, running), their rows locked until
-- the transaction ends: their streams may record the tries.
CREATE FUNCTION ledger_send_still_held(p_tries jsonb, p_owner text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    SELECT q.stream_id::text FROM send_queue AS q
    JOIN jsonb_to_recordset(p_tries) AS c(send_id uuid, attempt integer)
      ON q.send_id = c.send_id AND q.attempt = c.attempt
    WHERE q.lease_owner = p_owner AND q.state = 'running'
    FOR UPDATE OF q;
END
$$;

-- Settles the tries whose claims still hold: without `retry_at` the row leaves the queue; with
-- it the send is pending again not before then, and `uncalled` is added to its tries that made
-- no call. Returns their streams, which may record the outcomes; a try whose claim no longer
-- holds (a late answer from a rescued try) changes nothing.
CREATE FUNCTION ledger_send_settled(p_tries jsonb, p_owner text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH outcome AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset(p_tries)
            AS o(send_id uuid, attempt integer, retry_at timestamptz, uncalled integer)
    ), finished AS (
        DELETE FROM send_queue AS q USING outcome AS o
        WHERE q.send_id = o.send_id AND q.attempt = o.attempt AND o.retry_at IS NULL
          AND q.lease_owner = p_owner AND q.state = 'running'
        RETURNING q.stream_id
    ), retried AS (
        UPDATE send_queue AS q SET state = 'pending', lease_owner = NULL, lease_expires_at = NULL,
            not_before = o.retry_at, uncalled = q.uncalled + coalesce(o.uncalled, 0)
        FROM outcome AS o
        WHERE q.send_id = o.send_id AND q.attempt = o.attempt AND o.retry_at IS NOT NULL
          AND q.lease_owner = p_owner AND q.state = 'running'
        RETURNING q.stream_id
    )
    SELECT f.stream_id::text FROM finished AS f UNION ALL SELECT r.stream_id::text FROM retried AS r;
END
$$;

REVOKE EXECUTE ON FUNCTION ledger_send_still_held(jsonb, text), ledger_send_settled(jsonb, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_send_still_held(jsonb, text), ledger_send_settled(jsonb, text) TO ledger_app;

RESET client_min_messages;
