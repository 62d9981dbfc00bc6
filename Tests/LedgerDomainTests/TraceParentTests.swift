import Foundation
import LedgerDomain
import Testing

/// The `traceparent` kept in event metadata, as the W3C Trace Context ("traceparent Header")
/// defines it: `version-trace_id-parent_id-trace_flags`, lowercase hex, ids not all zero.
@Suite struct TraceParentTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let valid = "00-\(traceID)-\(parentID)-01"

    @Test("W3C Trace Context: a version 00 header is read as is")
    func validHeader() throws {
        let parent = try #require(TraceParent(header: Self.valid))
        #expect(parent.rawValue == Self.valid)
        #expect(parent.traceID == Self.traceID[...])
        #expect(parent.parentID == Self.parentID[...])
        #expect(parent.flags == "01")
        #expect(try TraceParent(Self.valid) == parent)
    }

    @Test("W3C Trace Context: invalid headers are not trace contexts", arguments: [
        "", "not a trace", "00-\(traceID)-\(parentID)",                       // too short
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-\(parentID)-01",                  // uppercase
        "00-00000000000000000000000000000000-\(parentID)-01",                  // trace id all zero
        "00-\(traceID)-0000000000000000-01",                                   // parent id all zero
        "ff-\(traceID)-\(parentID)-01",                                        // version ff is invalid
        "00-\(traceID)-\(parentID)-01-extra",                                  // version 00 is exactly 55 characters
        "00_\(traceID)-\(parentID)-01", "00-\(traceID)_\(parentID)-01",        // wrong separators
        "00-\(traceID)-\(parentID)-0g", "0x-\(traceID)-\(parentID)-01",        // not hex
        "01-\(traceID)-\(parentID)-01x",                                       // a later version needs '-' after the flags
    ])
    func invalidHeader(_ header: String) {
        #expect(TraceParent(header: header) == nil)
    }

    @Test("W3C Trace Context: a later version is read for its first four fields")
    func laterVersion() throws {
        #expect(TraceParent(header: "01-\(Self.traceID)-\(Self.parentID)-01")?.rawValue == Self.valid)
        #expect(TraceParent(header: "cc-\(Self.traceID)-\(Self.parentID)-01-what-the-future-holds")?.rawValue == Self.valid)
    }

    @Test("metadata keeps a traceparent, refuses an invalid one naming the field, and omits none")
    func metadata() throws {
        let catalog = EventCatalog.standard
        var metadata = EventMetadata(actor: "http-api")
        #expect(String(decoding: try catalog.encode(metadata: metadata), as: UTF8.self) == #"{"actor":"http-api"}"#)
        metadata.traceparent = try TraceParent(Self.valid)
        let data = try catalog.encode(metadata: metadata)
        #expect(String(decoding: data, as: UTF8.self) == #"{"actor":"http-api","traceparent":"\#(Self.valid)"}"#)
        #expect(try catalog.validateMetadata(data) == metadata)
        do {
            _ = try catalog.validateMetadata(Data(#"{"actor":"cli","traceparent":"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}"#.utf8))
            Issue.record("an invalid traceparent was accepted")
        } catch {
            #expect(error.field == "traceparent")
            #expect(error.rule == "w3c_traceparent")
        }
    }
}
