-- 0020_parked_sends.sql — a send parked for an operator after a try whose outcome is unknown.
--
-- When a worker ends (or its lease runs out) after a try's SendAttempted, the call may have reached
-- the provider. For a provider that counts every request it receives (Singular does not
-- deduplicate), the rescue parks the send instead of making it pending again
-- (SendQueue.rescue, UnknownOutcomePolicy in Sources/LedgerDispatch/Rules): its row stays, in
-- state 'parked', with no lease, until `ledger sends retry` makes it pending or `ledger sends
-- cancel` ends it. The log says so too (SendParked, SendUnparked), so a queue rebuilt from it
-- keeps the send parked.
--
-- ledger_claim_sends (0006, 0010) claims only 'pending' rows, so a parked row is never claimed;
-- it keeps its place in its lane (a device's Singular calls): the device's later calls wait
-- behind it, as each carries the SKAN state the calls before it left.

ALTER TABLE send_queue DROP CONSTRAINT send_queue_state_check;
ALTER TABLE send_queue ADD CONSTRAINT send_queue_state_check CHECK (state IN ('pending', 'running', 'parked'));

-- `ledger sends list --state parked` reads the parked rows; they are few.
CREATE INDEX send_queue_parked ON send_queue (enqueued_position) WHERE state = 'parked';
