-- 0011_singular_lanes.sql — a device's Singular calls go one at a time, in order.
--
-- Singular does not order what it receives: "events must arrive in order, a session before its
-- events" (design/provider-rules.md, facts beyond the seeds), and each conversion-value call
-- carries the SKAN state the answers before it left (seed 004's snippet calls one at a time,
-- under a lock). Until now only a device's Branch opens shared a lane (schema/0003), so a
-- device's Singular session, events and revenue could be claimed together and called side by
-- side. From now on they share the lane `singular:<device stream id>`
-- (SendQueue.lane(provider:deviceStreamID:)), apart from the device's Branch lane; this puts the
-- Singular sends already waiting into theirs.

UPDATE send_queue SET lane = 'singular:' || device_stream_id WHERE provider = 'singular' AND lane IS NULL;
