/// The personal fields a reader needs opened, by event type.
///
/// Opening an event decrypts its box and writes the values back into the payload; the writing
/// back is about a third of the work. A reader that uses few of an event's personal fields (the
/// SKAN projection reads a revenue event's `transaction_id`, none of its device's identifiers)
/// names them, and the others are left out of the payload it gets: absent, as if the app had not
/// sent them. An erased event is read the same either way (its marker lists every field).
public struct PersonalFieldSelection: Sendable, Hashable {
    /// For each listed event type, the dotted paths kept; unlisted types keep every field.
    public let pathsByType: [String: Set<String>]

    /// Every personal field of every event: what every read opens unless told otherwise.
    public static let all = PersonalFieldSelection(pathsByType: [:])

    /// For each event type in `pathsByType`, only those dotted paths (`transaction_id`,
    /// `device.idfa`); every field of the other types.
    public static func only(_ pathsByType: [String: Set<String>]) -> PersonalFieldSelection {
        PersonalFieldSelection(pathsByType: pathsByType)
    }

    /// The paths kept for `type`; nil when all are.
    func kept(for type: String) -> Set<String>? { pathsByType.isEmpty ? nil : pathsByType[type] }
}
