-- 0006_claim_function.sql — the send worker's claim as a function with a kept (generic) plan.
--
-- The claim (Sources/LedgerDispatch/Outbox/SendQueue.swift) was one UPDATE … FROM (SELECT …
-- FOR UPDATE SKIP LOCKED LIMIT $n) sent in a transaction with `SET LOCAL synchronous_commit =
-- off`: four round trips, and PostgreSQL planned it again on every call (about 0.3 ms, as much as
-- running it), because its generic plan — the row count behind LIMIT unknown — joined the whole
-- queue by hash. Here the picked ids are gathered into an array first, so the generic plan
-- probes the primary key whatever the limit, and the function runs it with that plan kept.
-- Called on its own (`p_commit_without_flush`), its commit need not wait for its flush
-- (`set_config(…, true)` holds until the end of its transaction): a claim lost in a crash leaves the send pending, as if never claimed,
-- and no call follows a claim before the try's `SendAttempted` commits durably, which flushes
-- the claim's WAL too.

SET client_min_messages = warning;

CREATE FUNCTION ledger_claim_sends(p_owner text, p_lease_until timestamptz, p_now timestamptz, p_limit integer,
                                   p_commit_without_flush boolean)
RETURNS TABLE (send_id uuid, stream_id text, attempt integer, request text, deadline timestamptz)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    IF p_commit_without_flush THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    RETURN QUERY
    UPDATE send_queue AS q SET state = 'running', attempt = q.attempt + 1, lease_owner = p_owner,
        lease_expires_at = p_lease_until
    WHERE q.send_id = ANY (ARRAY(
        SELECT c.send_id FROM send_queue AS c
        WHERE c.state = 'pending' AND c.not_before <= p_now
          AND (c.lane IS NULL OR NOT EXISTS (
              SELECT 1 FROM send_queue AS o
              WHERE o.lane = c.lane AND (o.state = 'running' OR o.enqueued_position < c.enqueued_position)))
        ORDER BY c.not_before, c.enqueued_position
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED))
    RETURNING q.send_id, q.stream_id::text, q.attempt, q.request::text, q.deadline;
END
$$;

COMMENT ON FUNCTION ledger_claim_sends(text, timestamptz, timestamptz, integer, boolean) IS
    'Claims up to p_limit due sends for p_owner (SKIP LOCKED; a lane offers only its oldest send, only while none of it runs).';

GRANT EXECUTE ON FUNCTION ledger_claim_sends(text, timestamptz, timestamptz, integer, boolean) TO ledger_app;

RESET client_min_messages;
