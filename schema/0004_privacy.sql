-- 0004_privacy.sql — crypto-shredding: per-device data keys kept outside the immutable log.
--
-- privacy_keys      the data keys (AES-256-GCM) that seal the personal fields of events, one or
--                   more per data subject (a device stream `device-<app>-<device>`), each wrapped
--                   (AES-GCM) by the master key of the configuration. `master_key_id` names that
--                   master key by fingerprint, never the key itself. Erasure destroys a subject's
--                   keys: `wrapped_key` becomes NULL and `destroyed_at` says when. The log's
--                   ciphertext stays, and its hashes with it, so `ledger verify` still passes.
-- privacy_erasures  one row per erased subject: when, by whose request, and the `ErasureCompleted`
--                   event that records it in the log. No key can be created for an erased subject.
--
-- The events table keeps sealed personal fields in each event's `data` under `ledger_personal`
-- (see docs/privacy.md). These tables are mutable on purpose: a key must be destroyable.

SET client_min_messages = warning;

CREATE TABLE privacy_keys (
    key_id          uuid        PRIMARY KEY,
    subject         text COLLATE "C" NOT NULL,
    wrapped_key     bytea,
    master_key_id   text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    destroyed_at    timestamptz,
    CONSTRAINT privacy_keys_destroyed CHECK ((wrapped_key IS NULL) = (destroyed_at IS NOT NULL)),
    CONSTRAINT privacy_keys_wrapped_length CHECK (wrapped_key IS NULL OR length(wrapped_key) = 60),
    CONSTRAINT privacy_keys_subject_length CHECK (length(subject) BETWEEN 1 AND 256)
);
CREATE INDEX privacy_keys_subject ON privacy_keys (subject);
COMMENT ON TABLE privacy_keys IS
    'Per-device data keys, wrapped by the configured master key; wrapped_key NULL = destroyed (erased).';

CREATE TABLE privacy_erasures (
    subject         text COLLATE "C" PRIMARY KEY,
    erased_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    requested_by    text        NOT NULL,
    requested_at    timestamptz NOT NULL,
    event_id        uuid        NOT NULL
);
COMMENT ON TABLE privacy_erasures IS 'Erased data subjects; the ErasureCompleted event is the log''s record of each.';

-- A key is never created for an erased subject, even by an append that raced the erasure: the
-- shared advisory lock waits for an erasure in progress (which holds it exclusively), and the
-- check then sees its commit. The insert is skipped (no error): the append stores the personal
-- fields as erased.
CREATE FUNCTION ledger_privacy_key_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('ledger.privacy.' || NEW.subject, 0));
    IF EXISTS (SELECT 1 FROM privacy_erasures WHERE subject = NEW.subject) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER privacy_keys_guard BEFORE INSERT ON privacy_keys
    FOR EACH ROW EXECUTE FUNCTION ledger_privacy_key_guard();

-- Erasures are permanent.
CREATE TRIGGER privacy_erasures_immutable BEFORE UPDATE OR DELETE ON privacy_erasures
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();

GRANT SELECT, INSERT, UPDATE ON privacy_keys TO ledger_app;
GRANT SELECT, INSERT ON privacy_erasures TO ledger_app;

RESET client_min_messages;
