import Crypto
import Foundation
import LedgerDomain
import LedgerPostgres
import Synchronization

extension PersonalDataProtection {
    /// Seals the personal fields of one append's events, fetching the subject's key at most once.
    final class BatchSealer {
        let protection: PersonalDataProtection
        let stream: String
        let events: [NewEvent]
        let connection: PostgresConnection
        /// The append follows on this connection outside a transaction: a new key commits with it
        /// (see ``DataKeys/acquire(subject:protection:on:beforeAppend:)``).
        let keyCommitsWithAppend: Bool
        /// Keys already looked up (or made) for this append's transaction, by subject; nil for an
        /// erased subject (``PersonalDataProtection/acquireKeys(for:on:)``).
        let acquired: [String: DataKey?]
        private var resolved = false
        private var key: DataKey?
        /// A key this append looked up on the deferred path, with the forget generation seen
        /// before the lookup: cached only after the append's durable commit, and only if no
        /// erasure in this process forgot keys meanwhile.
        private var keyToCache: (key: DataKey, generation: Int)?

        init(protection: PersonalDataProtection, stream: String, events: [NewEvent], connection: PostgresConnection,
             keyCommitsWithAppend: Bool = false, acquired: [String: DataKey?] = [:]) {
            self.protection = protection
            self.acquired = acquired
            self.stream = stream
            self.events = events
            self.connection = connection
            self.keyCommitsWithAppend = keyCommitsWithAppend
        }

        /// The key this sealer sealed with, once it sealed something (nil: nothing sealed, or the
        /// subject was erased).
        var usedKey: DataKey? { resolved ? key : nil }

        /// Called once the append this sealer served has committed durably: a key it made is
        /// now safe to remember.
        func appendCommitted() {
            guard let (key, generation) = keyToCache else { return }
            protection.cache(key, for: key.subject, now: Date(), unlessForgottenSince: generation)
        }

        /// The data to store for `event` (after it was validated), or nil to store it unchanged
        /// (no personal field holds a value).
        func seal(_ event: NewEvent) throws -> String? {
            guard let plan = protection.sealingPlan(type: event.type, schemaVersion: event.schemaVersion) else { return nil }
            let splitter = plan.splitter
            if splitter.pathsArePlain, splitter.certainlyHoldsNoPersonalMember(event.data) { return nil }
            guard splitter.pathsArePlain, let split = splitter.split(event.data) else {
                return try sealThroughTree(event, paths: plan.paths).map { String(decoding: $0, as: UTF8.self) }
            }
            guard !split.personal.isEmpty else { return nil }
            let fields = split.personal.map(\.path).sorted()
            try resolveKey(for: event)
            var out = split.remaining
            out.removeLast()  // the closing brace; the marker member goes before it
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            // Written as bytes, member by member (string interpolation here was a third of sealing).
            func appendFieldList() {
                out.append(UInt8(ascii: "["))
                for (index, field) in fields.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    out.append(UInt8(ascii: "\""))
                    out.append(contentsOf: field.utf8)
                    out.append(UInt8(ascii: "\""))
                }
                out.append(UInt8(ascii: "]"))
            }
            if let key {
                var plaintext: [UInt8] = [UInt8(ascii: "{")]
                plaintext.reserveCapacity(split.personal.reduce(2) { $0 + $1.path.utf8.count + $1.value.count + 4 })
                for (index, member) in split.personal.enumerated() {
                    if index > 0 { plaintext.append(UInt8(ascii: ",")) }
                    plaintext.append(UInt8(ascii: "\""))
                    plaintext.append(contentsOf: member.path.utf8)
                    plaintext.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
                    plaintext.append(contentsOf: member.value)
                }
                plaintext.append(UInt8(ascii: "}"))
                let combined = try seal(plaintext, with: key, event: event)
                out.reserveCapacity(out.count + combined.count * 4 / 3 + 160)
                out.append(contentsOf: Self.boxOpening)
                Base64.append(combined, to: &out)
                out.append(contentsOf: "\",\"fields\":".utf8)
                appendFieldList()
                out.append(contentsOf: ",\"key\":\"".utf8)
                out.append(contentsOf: key.idText.utf8)
                out.append(contentsOf: "\",\"v\":1}".utf8)
            } else {
                // The subject was erased: its personal data is not recorded at all.
                out.append(contentsOf: Self.erasedOpening)
                appendFieldList()
            }
            out.append(UInt8(ascii: "}"))
            return String(decoding: out, as: UTF8.self)
        }

        private static let boxOpening = Array("\"\(sealedKey)\":{\"box\":\"".utf8)
        private static let erasedOpening = Array("\"\(erasedMarkerKey)\":".utf8)

        /// The subject's key, looked up (or made) once per append.
        private func resolveKey(for event: NewEvent) throws {
            guard !resolved else { return }
            resolved = true
            guard let subject = try protection.subject(of: stream, batch: events, on: connection) else {
                throw PrivacyError.noDataSubject(stream: stream, eventType: event.type)
            }
            // A key that comes from the cache keeps its expiry (caching it again would extend it).
            if let cached = protection.cachedKey(for: subject, now: Date()) {
                key = cached
                return
            }
            if let known = acquired[subject] {
                key = known
                return
            }
            let generation = protection.forgetGeneration
            key = try DataKeys.acquire(subject: subject, protection: protection, on: connection,
                                       beforeAppend: keyCommitsWithAppend)
            if keyCommitsWithAppend, let key { keyToCache = (key, generation) }
        }

        private func seal(_ plaintext: [UInt8], with key: DataKey, event: NewEvent) throws -> Data {
            let box = try AES.GCM.seal(plaintext, using: key.key, nonce: NonceSource.shared.next(),
                                       authenticating: sealingContext(event.id, event.type))
            guard let combined = box.combined else { throw PrivacyError.integrity(what: "a sealed box") }
            return combined
        }

        /// The same through a `JSONSerialization` tree, for payloads the splitter steps aside from.
        private func sealThroughTree(_ event: NewEvent, paths: [String]) throws -> Data? {
            guard var object = try? JSONSerialization.jsonObject(with: event.data) as? [String: Any] else { return nil }
            var personal: [String: Any] = [:]
            for path in paths {
                if let value = PersonalPaths.remove(path, from: &object) { personal[path] = value }
            }
            guard !personal.isEmpty else { return nil }
            let fields = personal.keys.sorted()
            try resolveKey(for: event)
            if let key {
                let plaintext = try JSONSerialization.data(withJSONObject: personal, options: [.withoutEscapingSlashes])
                object[sealedKey] = ["v": 1, "key": key.id.uuidString.lowercased(), "fields": fields,
                                     "box": try seal([UInt8](plaintext), with: key, event: event).base64EncodedString()] as [String: Any]
            } else {
                object[erasedMarkerKey] = fields
            }
            // Key order is left as it comes: jsonb orders the stored object's keys itself.
            return try JSONSerialization.data(withJSONObject: object, options: [.withoutEscapingSlashes])
        }
    }

    /// What appending `events` to `stream` asks of sealing.
    enum SealingNeed: Equatable {
        /// Nothing to seal: privacy is off, or no event carries a value at a personal path.
        case none
        /// Seal with the subject's key, which is cached or known to exist.
        case seal
        /// Seal, and the subject's key may have to be made: the append and the new key should
        /// commit together.
        case sealMayCreateKey
    }

    /// What sealing `events` needs. A send stream's subject is looked up while sealing; it counts
    /// as unknown here unless already mapped. Only when no key is cached are the payloads probed
    /// for personal values (so a subject whose events never carry any does not pay a transaction
    /// on every append, and the probe's answer spares the sealer a second look).
    func sealingNeed(stream: String, events: [NewEvent]) -> SealingNeed {
        guard isEnabled, events.contains(where: { sealingPlan(type: $0.type, schemaVersion: $0.schemaVersion) != nil })
        else { return .none }
        let subject: String? = dataSubjects.isSubject(stream) ? stream : subjects.withLock { $0[stream] }
        guard let subject else { return dataSubjects.isLinked(stream) ? .sealMayCreateKey : .seal }
        guard cachedKey(for: subject, now: Date()) == nil else { return .seal }
        return events.contains(where: carriesPersonalValue) ? .sealMayCreateKey : .none
    }

    /// Whether sealing `event` would need its subject's key: some declared personal path holds a
    /// value (when the byte-level splitter steps aside, assumed yes).
    func carriesPersonalValue(_ event: NewEvent) -> Bool {
        guard let splitter = sealingPlan(type: event.type, schemaVersion: event.schemaVersion)?.splitter else { return false }
        guard splitter.pathsArePlain else { return true }
        if splitter.certainlyHoldsNoPersonalMember(event.data) { return false }
        guard let split = splitter.split(event.data) else { return true }
        return !split.personal.isEmpty
    }

    /// A sealer for one append.
    func sealer(stream: String, events: [NewEvent], on connection: PostgresConnection,
                keyCommitsWithAppend: Bool = false, acquired: [String: DataKey?] = [:]) -> BatchSealer? {
        isEnabled ? BatchSealer(protection: self, stream: stream, events: events, connection: connection,
                                keyCommitsWithAppend: keyCommitsWithAppend, acquired: acquired) : nil
    }

    /// The keys the appends of several streams will seal with, looked up or made in one statement
    /// (see ``DataKeys/acquire(subjects:protection:on:)`` for when they are cached), by subject;
    /// nil for an erased subject. Subjects with a cached key, and parts with nothing to seal, are
    /// left out. Inside a transaction one subject is left to the sealer's own lookup, as cheap.
    func acquireKeys(for parts: [(stream: String, events: [NewEvent])], on connection: PostgresConnection) throws
        -> AcquiredKeys
    {
        guard isEnabled else { return .none }
        let now = Date()
        var subjects: [String] = []
        var seen = Set<String>()
        for part in parts where sealingNeed(stream: part.stream, events: part.events) != .none {
            guard let subject = try subject(of: part.stream, batch: part.events, on: connection),
                  cachedKey(for: subject, now: now) == nil, seen.insert(subject).inserted
            else { continue }
            subjects.append(subject)
        }
        guard subjects.count > 1 || (!connection.isInTransaction && !subjects.isEmpty) else { return .none }
        return try DataKeys.acquire(subjects: subjects, protection: self, on: connection)
    }

    /// What a sealed box authenticates besides its content: the event's id and type, so a box
    /// copied into another event does not open.
    static func sealingContext(_ id: UUID, _ type: String) -> [UInt8] {
        var context = sealingContextPrefix
        context.reserveCapacity(context.count + 37 + type.utf8.count)
        id.appendLowercasedText(to: &context)
        context.append(UInt8(ascii: ":"))
        context.append(contentsOf: type.utf8)
        return context
    }

    private static let sealingContextPrefix = Array("ledger-personal:v1:".utf8)

    /// Opens the sealed personal fields of `events` in place: one key query for the batch. Events
    /// whose key was destroyed get their personal paths absent and ``erasedMarkerKey`` listing them.
    ///
    /// Like sealing, opening works on the bytes (``PersonalJSONSplitter``): the envelope member is
    /// cut out, and the opened values are written into the objects on their paths. An event the
    /// byte path cannot be sure of goes through a `JSONSerialization` tree instead.
    ///
    /// `selection` names the personal fields the caller reads; the others are left out of the
    /// opened payloads (see ``PersonalFieldSelection``).
    /// - Throws: ``PrivacyError`` when a key or box does not open with the configured master keys.
    public func reveal(_ events: inout [RecordedEvent], keeping selection: PersonalFieldSelection = .all,
                       on connection: PostgresConnection) throws {
        guard isEnabled else { return }
        var sealed: [(index: Int, cut: PersonalJSONSplitter.Cut?, envelope: SealedEnvelope)] = []
        var ids = Set<UUID>()
        for index in events.indices where events[index].data.contains(Self.sealedKeyMarker) {
            let envelope: SealedEnvelope
            var cut: PersonalJSONSplitter.Cut?
            if let found = PersonalJSONSplitter.cut(Self.sealedKey, from: [UInt8](events[index].data)),
                let parsed = SealedEnvelope(bytes: found.value)
                    ?? (try? JSONSerialization.jsonObject(with: Data(found.value)) as? [String: Any]).map(SealedEnvelope.init(tree:))
            {
                envelope = parsed
                cut = found
            } else if let object = try? JSONSerialization.jsonObject(with: events[index].data) as? [String: Any],
                let parsed = object[Self.sealedKey] as? [String: Any]
            {
                envelope = SealedEnvelope(tree: parsed)
            } else {
                continue
            }
            if let id = envelope.keyID { ids.insert(id) }
            sealed.append((index, cut, envelope))
        }
        guard !sealed.isEmpty else { return }
        let keys = try DataKeys.fetch(ids, protection: self, on: connection)
        for (index, cut, envelope) in sealed {
            let event = events[index]
            var opened: Data?
            if let id = envelope.keyID, let key = keys[id] {
                do {
                    let box = try AES.GCM.SealedBox(combined: envelope.boxBytes())
                    opened = try AES.GCM.open(box, using: key, authenticating: Self.sealingContext(event.id, event.type))
                } catch {
                    throw PrivacyError.integrity(what: "the personal fields of event \(event.id.uuidString.lowercased())")
                }
            }
            // The opened members, scanned once, those the caller reads. (Opened bytes that do not
            // scan go through the tree.)
            var members = opened.flatMap { PersonalJSONSplitter.members(of: [UInt8]($0)[...]) }
            if let kept = selection.kept(for: event.type) { members?.removeAll { !kept.contains($0.key) } }
            // Opened values that are all top-level take the envelope's place; anything else is
            // written into the rest of the object. The field names are read only where they are
            // written (an erased event's marker).
            if let cut, let members, let spliced = cut.replaced(by: members) {
                events[index].data = Data(spliced)
                continue
            }
            if let rest = cut?.rest(), opened == nil || members != nil,
                let revealed = Self.revealBytes(rest, opened: members, fields: opened == nil ? envelope.fields : []) {
                events[index].data = Data(revealed)
            } else {
                events[index].data = try Self.revealThroughTree(event.data, opened: opened, fields: envelope.fields,
                                                                keeping: selection.kept(for: event.type))
            }
        }
    }

    /// `"ledger_personal"`: an event whose bytes hold it may carry a sealed envelope.
    private static let sealedKeyMarker = ByteNeedle(Array("\"\(sealedKey)\"".utf8))

    /// The event's bytes with the opened members (dotted path → raw value) put back, or with the
    /// erased marker listing `fields` when the key is gone (`opened` nil); nil when the byte path
    /// steps aside.
    static func revealBytes(_ rest: [UInt8], opened: [JSONObjectBytes.Member]?, fields: [String]) -> [UInt8]? {
        guard let opened else {
            guard fields.allSatisfy(PersonalJSONSplitter.isPlain) else { return nil }
            let list = PersonalJSONSplitter.plainArray(fields)
            return PersonalJSONSplitter.insert([([Substring(erasedMarkerKey)], Array(list.utf8)[...])], into: rest[...])
        }
        return PersonalJSONSplitter.insert(opened.map { (dottedPath($0.key), $0.raw) }, into: rest[...])
    }

    /// `a.b.c` as its names. An ASCII path splits on its bytes; any other by `Character`, as
    /// before (a `.` followed by a combining mark is one character, not a separator).
    private static func dottedPath(_ key: String) -> [Substring] {
        guard key.utf8.allSatisfy({ $0 < 0x80 }) else { return key.split(separator: ".") }
        return key.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: true).map { Substring($0) }
    }

    /// The same through a `JSONSerialization` tree (keys sorted).
    static func revealThroughTree(_ data: Data, opened: Data?, fields: [String], keeping kept: Set<String>? = nil) throws -> Data {
        guard var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else { return data }
        object[sealedKey] = nil
        if let opened {
            let personal = try JSONSerialization.jsonObject(with: opened) as? [String: Any] ?? [:]
            for (path, value) in personal where kept?.contains(path) ?? true { PersonalPaths.set(value, at: path, in: &object) }
        } else {
            object[erasedMarkerKey] = fields
        }
        return try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}

/// Dotted key paths (no array indices) in a JSON object tree.
enum PersonalPaths {
    /// Removes the value at `path`; returns it, or nil when absent or `null`.
    static func remove(_ path: String, from object: inout [String: Any]) -> Any? {
        guard let dot = path.firstIndex(of: ".") else {
            guard let value = object[path], !(value is NSNull) else { return nil }
            object[path] = nil
            return value
        }
        let head = String(path[..<dot])
        guard var child = object[head] as? [String: Any] else { return nil }
        let value = remove(String(path[path.index(after: dot)...]), from: &child)
        if value != nil { object[head] = child }
        return value
    }

    /// Sets `value` at `path`, making the objects on the way if missing.
    static func set(_ value: Any, at path: String, in object: inout [String: Any]) {
        guard let dot = path.firstIndex(of: ".") else {
            object[path] = value
            return
        }
        let head = String(path[..<dot])
        var child = object[head] as? [String: Any] ?? [:]
        set(value, at: String(path[path.index(after: dot)...]), in: &child)
        object[head] = child
    }
}
