-- 0009_terminal_rule_in_appends.sql — one terminal event per send: checked by the append
-- statements instead of a BEFORE INSERT trigger.
--
-- The rule itself is unchanged and still the database's: the partial unique index
-- `events_one_terminal_per_send` (schema/0003) refuses a second SendSucceeded / SendFailed /
-- SendCancelled in a stream, whoever inserts it (a direct INSERT gets its 23505). What goes is
-- the trigger, whose only job was the clear error (LE004) where the append statements'
-- `ON CONFLICT DO NOTHING` would have swallowed the index's conflict. A trigger with a WHEN
-- clause costs every insert statement into `events` its WHEN, read back from its stored text and
-- prepared each time (≈ 10–20 µs of a single-event append under durable commits, measured with
-- pgbench: docs/performance.md), although only terminal events ever need it. The append
-- statements now call `ledger_refuse_second_terminal(stream, type)` for terminal events only
-- (a CASE on the event's type), which raises the same LE004 with the same message.
--
-- What the function sees: rows committed before it runs and this transaction's own (a volatile
-- function's query sees the rows its statement inserted before it). Two terminal events in one
-- append are refused by the store before it sends anything anyway (EventStore.preparePayload);
-- two racing appends also race for the stream's next version, and the loser's retry reads the
-- head again and is refused here.

CREATE FUNCTION ledger_refuse_second_terminal(p_stream text, p_type text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM events WHERE stream_id = p_stream
               AND event_type IN ('SendSucceeded', 'SendFailed', 'SendCancelled')) THEN
        RAISE EXCEPTION 'send stream % already has its terminal event; % is refused', p_stream, p_type
            USING ERRCODE = 'LE004', TABLE = 'events';
    END IF;
    RETURN true;
END
$$;

DROP TRIGGER events_one_terminal_per_send ON events;
DROP FUNCTION ledger_refuse_second_terminal();
