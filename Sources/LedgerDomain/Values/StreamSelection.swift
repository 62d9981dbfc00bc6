/// Streams read together as one history, in the log's order: some streams named outright, and
/// the streams whose event of a given type names a value in a given field.
///
/// The store reads a selection without knowing what its streams mean; what a device's history is
/// made of is decided here, beside the stream names it uses.
public struct StreamSelection: Sendable, Hashable {
    /// Streams whose events to read.
    public var streams: [String]
    /// Streams to read because an event of theirs points at something.
    public var linked: [Link]

    /// The streams that hold an event of `eventType` whose top-level `field` holds `value`.
    public struct Link: Sendable, Hashable {
        /// The event type that links (`SendRequested`).
        public var eventType: String
        /// Its top-level text field (`device_stream_id`): lowercase letters, digits and `_` only,
        /// because the store writes it into SQL to match the log's expression index.
        public var field: String
        /// The value the field must hold.
        public var value: String

        /// A link; see the properties.
        public init(eventType: String, field: String, value: String) {
            self.eventType = eventType
            self.field = field
            self.value = value
        }
    }

    /// A selection of `streams`, plus the `linked` ones.
    public init(streams: [String], linked: [Link] = []) {
        self.streams = streams
        self.linked = linked
    }

    /// Everything the ledger holds about one device: its own stream (`device-<app>/<device>`), its
    /// decisions (`decision-<app>/<device>`), and the streams of every send requested for it (the
    /// `SendRequested` whose `device_stream_id` names it). Any other stream is read alone.
    public static func deviceHistory(_ deviceStream: String) -> StreamSelection {
        let devicePrefix = StreamCategory.device.rawValue + "-"
        guard deviceStream.hasPrefix(devicePrefix) else { return StreamSelection(streams: [deviceStream]) }
        let decisions = StreamCategory.decision.rawValue + "-" + deviceStream.dropFirst(devicePrefix.count)
        return StreamSelection(
            streams: [deviceStream, decisions],
            linked: [Link(eventType: SendRequested.eventType, field: "device_stream_id", value: deviceStream)])
    }
}

/// Whose personal data each stream holds: the rule the privacy layer seals and erases by.
///
/// A subject's own streams (a device's) are their own subject; a linked stream (a send's) belongs
/// to the subject its first event names.
public struct DataSubjects: Sendable, Hashable {
    /// Prefix of the streams that are their own subject (`device-`).
    public var subjectPrefix: String
    /// Prefix of the streams whose subject their first event names (`send-`).
    public var linkedPrefix: String
    /// The type of that first event (`SendRequested`).
    public var linkEventType: String
    /// Its top-level text field that names the subject (`device_stream_id`).
    public var linkField: String

    /// A policy; see the properties.
    public init(subjectPrefix: String, linkedPrefix: String, linkEventType: String, linkField: String) {
        self.subjectPrefix = subjectPrefix
        self.linkedPrefix = linkedPrefix
        self.linkEventType = linkEventType
        self.linkField = linkField
    }

    /// The ledger's: a device's stream is its subject; a send's stream is its device's.
    public static let ledger = DataSubjects(
        subjectPrefix: StreamCategory.device.rawValue + "-", linkedPrefix: StreamCategory.send.rawValue + "-",
        linkEventType: SendRequested.eventType, linkField: "device_stream_id")

    /// Whether `stream` is a subject's own stream.
    public func isSubject(_ stream: String) -> Bool { stream.hasPrefix(subjectPrefix) }

    /// Whether `stream` belongs to the subject its first event names.
    public func isLinked(_ stream: String) -> Bool { stream.hasPrefix(linkedPrefix) }
}
