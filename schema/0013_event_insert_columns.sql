-- 0013_event_insert_columns.sql — the application's role inserts an event's own fields, never the
-- columns the database keeps for itself.
--
-- `position` comes from the identity and `transaction_id` from pg_current_xact_id(): gap-safe
-- global reading (docs/architecture.md) takes only rows whose transaction id is below every
-- reader's snapshot xmin, so a row written with a transaction id of the writer's choosing could
-- be read out of order or never. Until now `ledger_app` held INSERT on the whole table (0001),
-- and an INSERT naming `transaction_id` (or `position` with OVERRIDING SYSTEM VALUE) went in.
-- Now it may name only the columns the store writes: every append statement leaves those two to
-- their defaults. The store computes `recorded_at` and `hash` itself for most single appends
-- (Sources/LedgerStore/EventStore+AppendHashed.swift); `ledger verify` recomputes every hash.

SET client_min_messages = warning;

REVOKE INSERT ON events FROM ledger_app;
GRANT INSERT (stream_id, stream_version, event_id, event_type, schema_version, data, metadata, occurred_at,
              recorded_at, hash) ON events TO ledger_app;

RESET client_min_messages;
