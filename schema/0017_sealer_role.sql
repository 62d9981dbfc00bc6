-- 0017_sealer_role.sql — seals are written by the sealer's role, not the application's.
--
-- ledger_app appends and reads; until now it could also insert seals. ledger_sealer reads the
-- log and inserts seals, and nothing else: a process that holds the seal signing key logs in as
-- a member of it (`ledger seal`, or serve and worker when their role is a member too; see
-- docs/operations.md, "Roles"). A seal is also checked as it goes in: numbered after the newest,
-- chained to its digest, and covering a later point of the global order.

SET client_min_messages = warning;

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ledger_sealer') THEN
        BEGIN
            CREATE ROLE ledger_sealer NOLOGIN;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- another database of this cluster created it at the same moment
        END;
    END IF;
END
$$;

REVOKE INSERT ON seals FROM ledger_app;
GRANT SELECT, INSERT ON seals TO ledger_sealer;
GRANT SELECT ON events TO ledger_sealer;
GRANT USAGE ON SCHEMA public TO ledger_sealer;

CREATE FUNCTION ledger_check_seal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_newest seals%ROWTYPE;
BEGIN
    SELECT * INTO v_newest FROM seals ORDER BY seal_number DESC LIMIT 1;
    IF NEW.seal_number <> coalesce(v_newest.seal_number, 0) + 1 THEN
        RAISE EXCEPTION 'seal % does not follow the newest seal (%)', NEW.seal_number, coalesce(v_newest.seal_number, 0)
            USING ERRCODE = 'LE007', TABLE = 'seals', COLUMN = 'seal_number';
    END IF;
    IF NEW.previous_digest IS DISTINCT FROM v_newest.digest THEN
        RAISE EXCEPTION 'seal % does not chain to seal %''s digest', NEW.seal_number, v_newest.seal_number
            USING ERRCODE = 'LE007', TABLE = 'seals', COLUMN = 'previous_digest';
    END IF;
    IF (NEW.up_to_transaction, NEW.up_to_position) <= (v_newest.up_to_transaction, v_newest.up_to_position) THEN
        RAISE EXCEPTION 'seal % ends at or before where seal % ends', NEW.seal_number, v_newest.seal_number
            USING ERRCODE = 'LE007', TABLE = 'seals', COLUMN = 'up_to_position';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER seals_checked BEFORE INSERT ON seals FOR EACH ROW EXECUTE FUNCTION ledger_check_seal();

RESET client_min_messages;
