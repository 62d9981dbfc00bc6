import Foundation
import LedgerDomain
import Testing

@Suite("Personal fields point at real keys")
struct PersonalFieldsTests {
    /// Key names that hold personal data wherever they appear in the ledger's own JSON.
    static let personalKeyNames: Set<String> = [
        "idfa", "idfv", "gaid", "android_id", "oaid", "ip", "user_agent", "custom_user_id", "gclid", "gbraid", "wbraid",
        "link_click_id", "url", "referrer_url", "google_search_install_referrer", "transaction_id", "headers", "body", "detail",
    ]

    /// The value at a dotted path (no array indices), or `nil`.
    static func resolve(_ path: String, in tree: Any) -> Any? {
        path.split(separator: ".").reduce(Optional(tree)) { node, key in (node as? [String: Any])?[String(key)] }
    }

    @Test("every personal field of every type exists in its fully populated samples")
    func pathsExist() throws {
        var found: [String: Set<String>] = [:]
        for sample in try Samples.all() {
            found[type(of: sample).eventType, default: []].formUnion(try presentPaths(sample))
        }
        for entry in EventCatalog.standard.entries {
            #expect(Set(entry.personalFields).count == entry.personalFields.count, "\(entry.eventType) lists a field twice")
            let missing = Set(entry.personalFields).subtracting(found[entry.eventType] ?? [])
            #expect(missing.isEmpty, "\(entry.eventType).personalFields names keys absent from its JSON: \(missing.sorted())")
        }
    }

    /// The personal paths of `event` that hold a value in its JSON.
    private func presentPaths<Event: LedgerEvent>(_ event: Event) throws -> Set<String> {
        let tree = try JSONEditing.tree(event)
        return Set(Event.personalFields.filter { path in
            let value = Self.resolve(path, in: tree)
            return value != nil && !(value is NSNull)
        })
    }

    @Test("every key that usually holds personal data is marked, wherever it appears")
    func nothingForgotten() throws {
        for sample in try Samples.all() {
            try checkMarked(sample)
        }
    }

    private func checkMarked<Event: LedgerEvent>(_ event: Event) throws {
        let personal = Set(Event.personalFields)
        func walk(_ node: Any, _ path: String) {
            guard let object = node as? [String: Any] else { return }
            for (key, value) in object {
                let child = path.isEmpty ? key : path + "." + key
                if personal.contains(child) { continue }  // the whole subtree is personal
                // SendRequested's parameters and ResponseReceived's headers are documented as never personal.
                if Self.personalKeyNames.contains(key), !(Event.self == ResponseReceived.self && key == "headers") {
                    Issue.record("\(Event.eventType): '\(child)' looks personal but is not in personalFields")
                }
                walk(value, child)
            }
        }
        walk(try JSONEditing.tree(event), "")
    }

    @Test("an event whose personal fields were all removed still decodes (an erased event stays readable)")
    func erasedEventsDecode() throws {
        for sample in try Samples.all() {
            try checkErasable(sample)
        }
    }

    private func checkErasable<Event: LedgerEvent>(_ event: Event) throws {
        var data = try EventCatalog.standard.encode(event)
        for path in Event.personalFields {
            data = try JSONEditing.data(
                from: data, setting: nil, at: path.split(separator: ".").map { Step.key(String($0)) })
        }
        do {
            _ = try EventCatalog.standard.decode(type: Event.eventType, schemaVersion: Event.schemaVersion, data: data)
        } catch {
            Issue.record("\(Event.eventType) without its personal fields does not decode: \(error)")
        }
    }

    @Test("decisions, erasures and SKAN postbacks hold no personal data")
    func categoriesWithoutPersonalData() {
        for entry in EventCatalog.standard.entries where [.decision, .privacy, .skanPostback].contains(entry.category) {
            #expect(entry.personalFields.isEmpty, "\(entry.eventType)")
        }
    }
}
