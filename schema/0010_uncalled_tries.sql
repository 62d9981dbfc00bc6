-- 0010_uncalled_tries.sql — a try that made no call does not count against a provider's attempts.
--
-- A claim bumps `attempt`, and the try's number names its events (`SendAttempted` ids follow
-- from the send and the attempt), so every try keeps its own number. But some tries end without
-- calling the provider: a request that changed while its send waited for a slot
-- (`request_changed_while_waiting`), a lease too short left for the call
-- (`lease_too_short_for_call`). Their outcome is a `RetryScheduled` with `"called": false`, and
-- the providers' limits count calls, not tries: Apple's "maximum of three attempts" after 404s
-- is three calls. `uncalled` counts a send's tries that made no call; the claim returns it, and
-- the worker's rules see the call number `attempt - uncalled`. The queue stays a projection:
-- `SendQueue.rebuild` counts the same from the log.

SET client_min_messages = warning;

ALTER TABLE send_queue ADD COLUMN uncalled integer NOT NULL DEFAULT 0;
ALTER TABLE send_queue ADD CONSTRAINT send_queue_uncalled CHECK (uncalled >= 0 AND uncalled <= attempt);
COMMENT ON COLUMN send_queue.uncalled IS
    'Tries of this send that made no call (RetryScheduled with called false): the call number is attempt - uncalled.';

DROP FUNCTION ledger_claim_sends(text, timestamptz, timestamptz, integer, boolean);

-- As in 0006, with the send's `uncalled` returned beside its attempt.
CREATE FUNCTION ledger_claim_sends(p_owner text, p_lease_until timestamptz, p_now timestamptz, p_limit integer,
                                   p_commit_without_flush boolean)
RETURNS TABLE (send_id uuid, stream_id text, attempt integer, uncalled integer, request text, deadline timestamptz)
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
    RETURNING q.send_id, q.stream_id::text, q.attempt, q.uncalled, q.request::text, q.deadline;
END
$$;

COMMENT ON FUNCTION ledger_claim_sends(text, timestamptz, timestamptz, integer, boolean) IS
    'Claims up to p_limit due sends for p_owner (SKIP LOCKED; a lane offers only its oldest send, only while none of it runs).';

GRANT EXECUTE ON FUNCTION ledger_claim_sends(text, timestamptz, timestamptz, integer, boolean) TO ledger_app;

RESET client_min_messages;
