-- 0005_append_chain.sql — the batch append's hash chain as a running (window) aggregate.
--
-- The batch statement (Sources/LedgerStore/EventStore+Append.swift) used to walk a batch with a
-- recursive CTE, joining the whole batch at every step. `ledger_chain(previous, canonical)
-- OVER (ORDER BY n)` computes the same chain in one pass: each row's value is
-- sha256(the row before's value, or the stream head's hash for the first row || its canonical
-- bytes), exactly as ledger_event_hash (0001) chains one event after another. PostgreSQL advances
-- a window aggregate whose frame starts at the partition's first row without restarting it.

SET client_min_messages = warning;

CREATE FUNCTION ledger_chain_step(p_state bytea, p_previous bytea, p_canonical bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT sha256(coalesce(p_state, p_previous, ''::bytea) || p_canonical)
$$;

CREATE AGGREGATE ledger_chain(bytea, bytea) (SFUNC = ledger_chain_step, STYPE = bytea);

COMMENT ON AGGREGATE ledger_chain(bytea, bytea) IS
    'Running hash chain: sha256(previous value, or the head hash first || canonical bytes), in the window''s order.';

RESET client_min_messages;
