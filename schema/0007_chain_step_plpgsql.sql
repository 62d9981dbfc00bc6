-- 0007_chain_step_plpgsql.sql — the batch append's chain step in PL/pgSQL.
--
-- `ledger_chain` (0005) calls its transition function once per event of a batch. As a SQL
-- function that call is not inlined: PostgreSQL runs a small executor for every row (≈ 3.5 µs a
-- row here), where a PL/pgSQL function evaluates the one expression on its fast path (≈ 2.5 µs,
-- ≈ 1.25 of which is the SHA-256 itself). Same inputs, same result: stored hashes and
-- `ledger verify` are unaffected. (A single event's hash, `ledger_event_hash`, is a scalar SQL
-- function, which PostgreSQL does inline, so it stays as it is.)

SET client_min_messages = warning;

CREATE OR REPLACE FUNCTION ledger_chain_step(p_state bytea, p_previous bytea, p_canonical bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN sha256(coalesce(p_state, p_previous, ''::bytea) || p_canonical);
END
$$;

RESET client_min_messages;
