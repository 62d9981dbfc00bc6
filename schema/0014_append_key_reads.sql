-- 0014_append_key_reads.sql — the rows every append statement reads about a stream's keys, as a
-- view, so that a layout which keeps those keys elsewhere answers from there.
--
-- An append reads `event_key_rows` twice: a stream's head (its last version, hash and
-- recorded_at: the event it chains its hash to and stamps its `recorded_at` after) and whether
-- its event ids are stored (a taken id stores nothing).
--
-- Here the view is `events` itself: a plain view is expanded from its stored query tree and
-- pulled up, so the statements' plans are the ones they had reading `events` directly, at no
-- planning cost. `ops/sql/partition-events-by-time.sql` replaces it: with `events` partitioned by
-- time, a read by stream or id would probe every partition (neither names the partition key),
-- so the view reads the unpartitioned `event_keys` there, and an append costs the same with three
-- partitions or thirty (Tests/LedgerStoreTests/AppendKeyReadTests.swift).

CREATE VIEW event_key_rows AS
    SELECT event_id, stream_id, stream_version, recorded_at, hash FROM events;
COMMENT ON VIEW event_key_rows IS
    'The keys appends read (a stream''s head, stored ids): events itself, or event_keys once events is partitioned by time.';

REVOKE ALL ON event_key_rows FROM PUBLIC;
GRANT SELECT ON event_key_rows TO ledger_app;
