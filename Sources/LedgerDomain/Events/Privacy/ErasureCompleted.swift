import Foundation

/// A device's personal data was erased: its key was destroyed, so every personal field of its
/// events is unreadable, and its pending sends were cancelled. The proof an auditor asks for.
/// Holds no personal data.
///
/// Stream: `device-<app>/<device>` (the erased device's own stream, so every reader of the device
/// sees the erasure in order).
public struct ErasureCompleted: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "ErasureCompleted"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.privacy
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.device
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// The erased device's stream (also the stream this event is in; kept in the data for readers
    /// of the `ErasureCompleted` type who do not look at stream ids).
    public var deviceStreamID: StreamID
    /// Who asked: a role or system (`dsar-portal`, `support`, `app-backend`), never a person's
    /// name or address.
    public var requestedBy: String
    /// When the erasure was asked for (the legal clock runs from here).
    public var requestedAt: Date

    /// Creates the event.
    public init(deviceStreamID: StreamID, requestedBy: String, requestedAt: Date) {
        self.deviceStreamID = deviceStreamID
        self.requestedBy = requestedBy
        self.requestedAt = requestedAt
    }

    enum CodingKeys: String, CodingKey {
        case deviceStreamID = "device_stream_id"
        case requestedBy = "requested_by"
        case requestedAt = "requested_at"
    }

    /// A device stream; a requester of 1–200 characters.
    public func validate() throws(RuleViolation) {
        try Check.streamCategory(deviceStreamID, .device, "device_stream_id")
        try Check.text(requestedBy, "requested_by", max: 200)
    }
}
