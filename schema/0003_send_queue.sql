-- 0003_send_queue.sql — the pending sends: an index of work, derivable from the log.
--
-- send_queue  one row per send that is pending or running; a send leaves it in the transaction
--             that records its terminal event, so the table stays small and history lives in
--             `events`. Rebuildable from the log (`ledger worker --rebuild-queue`): a send is
--             pending when its stream has a `SendRequested` and no terminal event.
--
-- The worker claims with FOR UPDATE SKIP LOCKED, sets a lease and bumps the attempt; an outcome
-- is committed only while the attempt and lease owner still match. A lane (a Branch device)
-- offers only its oldest send, and only when nothing of it is running.

SET client_min_messages = warning;

CREATE TABLE send_queue (
    send_id           uuid        PRIMARY KEY,
    stream_id         text COLLATE "C" NOT NULL UNIQUE,
    provider          text        NOT NULL,
    kind              text        NOT NULL,
    device_stream_id  text COLLATE "C" NOT NULL,
    lane              text COLLATE "C",
    enqueued_position bigint      NOT NULL,
    enqueued_at       timestamptz NOT NULL,
    not_before        timestamptz NOT NULL,
    deadline          timestamptz NOT NULL,
    attempt           integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    state             text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running')),
    lease_owner       text,
    lease_expires_at  timestamptz,
    request           jsonb       NOT NULL,
    CONSTRAINT send_queue_lease CHECK ((state = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);
COMMENT ON TABLE send_queue IS 'Pending and running sends only; history lives in events (send-<uuid> streams).';

CREATE INDEX send_queue_due ON send_queue (not_before, enqueued_position) WHERE state = 'pending';
CREATE INDEX send_queue_lane ON send_queue (lane, enqueued_position) WHERE lane IS NOT NULL;
CREATE INDEX send_queue_running ON send_queue (lease_expires_at) WHERE state = 'running';
CREATE INDEX send_queue_device ON send_queue (device_stream_id);

-- One terminal event per send, as a database rule: a second SendSucceeded / SendFailed /
-- SendCancelled in the same send stream is refused (SQLSTATE LE004), whoever tries it. The
-- trigger gives the clear error (the append's ON CONFLICT DO NOTHING would swallow a bare unique
-- violation); the unique index holds even if triggers were disabled. The WHEN clause keeps the
-- trigger off every other append. Two terminal events racing into one stream also race for the
-- same stream version, so the loser always sees the winner's.
CREATE UNIQUE INDEX events_one_terminal_per_send ON events (stream_id)
    WHERE event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled');

CREATE FUNCTION ledger_refuse_second_terminal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events WHERE stream_id = NEW.stream_id
               AND event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled')) THEN
        RAISE EXCEPTION 'send stream % already has its terminal event; % is refused', NEW.stream_id, NEW.event_type
            USING ERRCODE = 'LE004', TABLE = 'events';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER events_one_terminal_per_send BEFORE INSERT ON events
    FOR EACH ROW WHEN (NEW.event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled'))
    EXECUTE FUNCTION ledger_refuse_second_terminal();

-- Whether the worker process `p_owner` is alive: it holds a session-level advisory lock on its
-- name for as long as it runs; the lock goes with its session when the process dies.
CREATE FUNCTION ledger_worker_alive(p_owner text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND objsubid = 1 AND granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('ledger.worker.' || p_owner, 0))
$$;

GRANT SELECT, INSERT, UPDATE, DELETE ON send_queue TO ledger_app;

RESET client_min_messages;
