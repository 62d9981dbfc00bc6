-- 0015_signed_seals.sql — seals may carry a signature made outside the database.
--
-- signature       Ed25519 over the seal's fields (number, last transaction id and position, event
--                 count, previous digest, digest; see SealSigning.swift), by a key the database
--                 never holds: a rewrite of the log with recomputed digests cannot be signed.
-- signing_key_id  the first 16 hex digits of the SHA-256 of the signing public key.
-- Seals made before this migration, or by a process without a key, have neither.

ALTER TABLE seals
    ADD COLUMN signature bytea,
    ADD COLUMN signing_key_id text,
    ADD CONSTRAINT seals_signature_length CHECK (signature IS NULL OR length(signature) = 64),
    ADD CONSTRAINT seals_signed_with_key CHECK ((signature IS NULL) = (signing_key_id IS NULL));

COMMENT ON COLUMN seals.signature IS 'Ed25519 signature of the seal by the sealer''s key (not stored here); NULL when unsigned.';

-- The service logs in as a role that is only a member of ledger_app (docs/operations.md, "Roles"):
-- neither a superuser nor the tables' owner, so it cannot disable the immutability triggers. It is
-- given no CREATE on the schema: the projections' tables are made by `ledger migrate` (as the
-- owner) and granted to ledger_app, so a service role never owns a table another role writes.

-- The hash functions are the append statements' (run as ledger_app), not everyone's. (Hashes are
-- unkeyed: anyone can compute one outside the database; what no one without the signing key can
-- make is a seal's signature.)
REVOKE EXECUTE ON FUNCTION ledger_event_hash(bytea, text, bigint, uuid, text, integer, jsonb, jsonb, timestamptz, timestamptz)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ledger_event_hash(bytea, text, bigint, uuid, text, integer, jsonb, jsonb, timestamptz, timestamptz)
    TO ledger_app;
REVOKE EXECUTE ON FUNCTION ledger_event_hash_called(bytea, text, bigint, uuid, text, integer, jsonb, jsonb, timestamptz,
                                                    timestamptz) FROM PUBLIC;
