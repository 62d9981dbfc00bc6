-- 0019_drop_unused_append_functions.sql — drops the SQL functions no append statement calls.
--
-- A single append takes one of two statements (Sources/LedgerStore/EventStore+Append.swift): the
-- cached-head insert after a head the store remembers, or the general statement that reads the
-- head. Neither hashes: the database's check of each inserted event (0016) chains it. So
-- `ledger_event_hash_called` (0012, for a head-reading statement that hashed in the database only
-- for a stream with events) and `ledger_chain` with its step function (0005, 0007, a running hash
-- for batch statements) are called by nothing. `ledger_event_hash` (0001) stays: the
-- check and `ledger verify` compute every hash with it.

SET client_min_messages = warning;

DROP FUNCTION ledger_event_hash_called(bytea, text, bigint, uuid, text, integer, jsonb, jsonb, timestamptz, timestamptz);
DROP AGGREGATE ledger_chain(bytea, bytea);
DROP FUNCTION ledger_chain_step(bytea, bytea, bytea);

RESET client_min_messages;
