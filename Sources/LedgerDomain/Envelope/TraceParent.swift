/// A W3C Trace Context `traceparent` (version `00`): the trace an event was appended in, kept in
/// its metadata so that an auditor can join a trace to the log, and so that the worker's try of
/// a send continues the trace of the fact that caused it.
///
/// Text form (W3C Trace Context, "traceparent Header"): `00-<trace-id>-<parent-id>-<trace-flags>`,
/// 55 characters: a trace id of 32 lowercase hex digits, not all zero; a parent id of 16 lowercase
/// hex digits, not all zero; flags of 2 lowercase hex digits. It names a trace and a span, never a
/// person, and holds no secret.
public struct TraceParent: ValidatedString {
    /// The header's text, version `00`.
    public let rawValue: String

    /// The trace's id: 32 lowercase hex digits.
    public var traceID: Substring { rawValue.dropFirst(3).prefix(32) }
    /// The id of the span the trace continues from: 16 lowercase hex digits.
    public var parentID: Substring { rawValue.dropFirst(36).prefix(16) }
    /// The trace flags: 2 lowercase hex digits (`01`: sampled).
    public var flags: Substring { rawValue.suffix(2) }

    /// Validates a stored `traceparent`: exactly the version `00` form.
    /// - Throws: `w3c_traceparent` naming what is wrong.
    public init(_ rawValue: String) throws(RuleViolation) {
        guard rawValue.utf8.count == 55, rawValue.hasPrefix("00-") else {
            throw RuleViolation(
                rule: "w3c_traceparent",
                message: "A traceparent is '00-', a 32-digit trace id, '-', a 16-digit parent id, '-' and 2 digits of flags (55 characters).")
        }
        try Self.checkFields(Array(rawValue.utf8))
        self.rawValue = rawValue
    }

    /// Parses an incoming `traceparent` header as the W3C Trace Context asks a receiver to: a
    /// version other than `00` (but never `ff`) is read for its first four fields when a `-`
    /// or nothing follows them; anything else is not a trace context. Returns nil for an invalid
    /// header: it is ignored, never stored, and never fails the request that carried it.
    public init?(header: String) {
        let bytes = Array(header.utf8)
        guard bytes.count >= 55, Self.isHex(bytes[0]), Self.isHex(bytes[1]), bytes[2] == UInt8(ascii: "-") else { return nil }
        let version = String(decoding: bytes[0..<2], as: UTF8.self)
        if version == "ff" { return nil }
        if version == "00" {
            guard bytes.count == 55 else { return nil }
        } else if bytes.count > 55, bytes[55] != UInt8(ascii: "-") {
            return nil
        }
        var fields = Array(bytes[0..<55])
        fields[0] = UInt8(ascii: "0")
        fields[1] = UInt8(ascii: "0")
        do {
            try Self.checkFields(fields)
        } catch {
            return nil
        }
        rawValue = String(decoding: fields, as: UTF8.self)
    }

    /// Makes one from its parts (a tracer's own span context).
    /// - Throws: `w3c_traceparent` when a part is not of the form above.
    public init(traceID: String, parentID: String, sampled: Bool) throws(RuleViolation) {
        try self.init("00-\(traceID)-\(parentID)-\(sampled ? "01" : "00")")
    }

    /// The fields after the version: the dashes, lowercase hex throughout, and ids not all zero.
    private static func checkFields(_ bytes: [UInt8]) throws(RuleViolation) {
        let dashes = [2, 35, 52]
        for (index, byte) in bytes.enumerated() {
            let wanted = dashes.contains(index) ? byte == UInt8(ascii: "-") : isHex(byte)
            guard wanted else {
                throw RuleViolation(
                    rule: "w3c_traceparent",
                    message: "A traceparent holds lowercase hex digits separated by '-' at characters 3, 36 and 53.")
            }
        }
        if bytes[3..<35].allSatisfy({ $0 == UInt8(ascii: "0") }) {
            throw RuleViolation(rule: "w3c_traceparent_trace_id", message: "A traceparent's trace id must not be all zeros.")
        }
        if bytes[36..<52].allSatisfy({ $0 == UInt8(ascii: "0") }) {
            throw RuleViolation(rule: "w3c_traceparent_parent_id", message: "A traceparent's parent id must not be all zeros.")
        }
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
