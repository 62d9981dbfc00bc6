import Foundation
import LedgerDomain
import Testing

@Suite("Stream ids")
struct StreamIDTests {
    @Test("device streams are device-<app>/<device>")
    func deviceStream() throws {
        let stream = try StreamID.device(app: AppID("com.example.game"), device: DeviceID("4f1c-99"))
        #expect(stream.rawValue == "device-com.example.game/4f1c-99")
        #expect(stream.category == "device")
        #expect(stream.sendID == nil)
    }

    @Test("send streams are send-<lowercase uuid> and give their send id back")
    func sendStream() {
        let id = UUID(uuidString: "6F9619FF-8B86-D011-B42D-00C04FC964FF")!
        let stream = StreamID.send(id: id)
        #expect(stream.rawValue == "send-6f9619ff-8b86-d011-b42d-00c04fc964ff")
        #expect(stream.category == "send")
        #expect(stream.sendID == id)
    }

    @Test("decision and SKAN streams")
    func otherStreams() throws {
        let app = try AppID("1234567890")
        #expect(try StreamID.decisions(app: app, device: DeviceID("d1")).rawValue == "decision-1234567890/d1")
        let skan = try StreamID.skanPostbacks(app: app, transactionID: "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30")
        #expect(skan.rawValue == "skan-1234567890/6aafb7a5-0170-41b5-bbe4-fe71dedf1e30")
        #expect(try StreamID.refusedSKANPostbacks(app: app, digest: "00ff").rawValue == "skan-1234567890/rejected/00ff")
        #expect(skan.category == "skan")
        #expect(throws: RuleViolation.self) { try StreamID.skanPostbacks(app: app, transactionID: "a b") }
    }

    @Test("category is the text before the first dash, or the whole id", arguments: [
        ("device-app-dev", "device"), ("send-6f9619ff-8b86", "send"), ("seals", "seals"), ("a-", "a"),
    ])
    func category(_ raw: String, _ expected: String) throws {
        #expect(try StreamID(raw).category == expected)
    }

    @Test("stream ids follow the store's syntax", arguments: ["", "-device", "/device", "device app", "dévice-x", String(repeating: "a", count: 257)])
    func invalid(_ raw: String) {
        #expect(throws: RuleViolation.self) { try StreamID(raw) }
    }

    @Test("the longest app and device ids still make a valid stream id")
    func longest() throws {
        let app = try AppID(String(repeating: "a", count: AppID.maximumLength))
        let device = try DeviceID(String(repeating: "d", count: DeviceID.maximumLength))
        let stream = try StreamID.decisions(app: app, device: device)
        #expect(stream.rawValue.count <= StreamID.maximumLength)
        #expect(try StreamID(stream.rawValue) == stream)
    }

    @Test("a device id with characters a stream cannot hold is refused by the builder, without quoting it")
    func unsafeDevice() throws {
        let device = try DeviceID("user@example.com")
        do {
            _ = try StreamID.device(app: AppID("app"), device: device)
            Issue.record("accepted")
        } catch {
            #expect(error.rule == "stream_safe_characters")
            #expect(!error.message.contains("example.com"))
        }
    }

    @Test("stream ids encode as bare strings and refuse bad text when decoded")
    func codable() throws {
        let stream = StreamID.send(id: UUID())
        let data = try LedgerJSON.makeEncoder().encode([stream])
        #expect(try LedgerJSON.makeDecoder().decode([StreamID].self, from: data) == [stream])
        #expect(throws: DecodingError.self) { try LedgerJSON.makeDecoder().decode([StreamID].self, from: Data(#"["no spaces"]"#.utf8)) }
    }

    @Test("the audit's collision: com.acme.game + lite-x and com.acme.game-lite + x name different streams")
    func auditCollision() throws {
        let a = (try AppID("com.acme.game"), try DeviceID("lite-x"))
        let b = (try AppID("com.acme.game-lite"), try DeviceID("x"))
        #expect(try StreamID.device(app: a.0, device: a.1) != StreamID.device(app: b.0, device: b.1))
        #expect(try StreamID.decisions(app: a.0, device: a.1) != StreamID.decisions(app: b.0, device: b.1))
        #expect(try StreamID.skanPostbacks(app: a.0, transactionID: "lite-x") != StreamID.skanPostbacks(app: b.0, transactionID: "x"))
    }

    /// Ids drawn from every character the id rules allow, separators weighted up so that ids are
    /// full of `-`, `.`, `_` and `:`.
    static func randomID(_ generator: inout some RandomNumberGenerator, maxLength: Int) -> String {
        let separators = Array("-._:")
        let others = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        let length = Int.random(in: 1...maxLength, using: &generator)
        return String((0..<length).map { _ in
            Bool.random(using: &generator) ? separators.randomElement(using: &generator)! : others.randomElement(using: &generator)!
        })
    }

    @Test("property: no two (app, device), (app, decision) or (app, transaction) pairs name the same stream, and each id gives its pair back")
    func injective() throws {
        var generator = SystemRandomNumberGenerator()
        var seen: [String: (String, String)] = [:]
        for round in 0..<20_000 {
            // Short ids make collisions of the old encoding likely: the property must hold anyway.
            let maxLength = round % 2 == 0 ? 4 : 24
            let app = try AppID(Self.randomID(&generator, maxLength: maxLength))
            let local = Self.randomID(&generator, maxLength: maxLength)
            let device = try DeviceID(local)
            for stream in [try StreamID.device(app: app, device: device), try StreamID.decisions(app: app, device: device),
                           try StreamID.skanPostbacks(app: app, transactionID: local)] {
                let pair = (stream.category + ":" + app.rawValue, local)
                if let earlier = seen[stream.rawValue] {
                    #expect(earlier == pair, "\(stream.rawValue) names both \(earlier) and \(pair)")
                }
                seen[stream.rawValue] = pair
                let tenant = try #require(stream.tenant)
                #expect(tenant.app == app)
                #expect(tenant.local == local)
                #expect(try StreamID(stream.rawValue) == stream)
            }
        }
        #expect(seen.count > 10_000)
    }

    @Test("per-app streams named without '/' are legacy and name no tenant", arguments: [
        "device-com.acme.game-lite-x", "decision-app-dev", "skan-525463029-6aafb7a5", "skan-rejected-00ff",
    ])
    func legacy(_ raw: String) throws {
        let stream = try StreamID(raw)
        #expect(stream.isLegacyPerApp)
        #expect(stream.tenant == nil)
    }

    @Test("send streams and other categories are neither tenant streams nor legacy")
    func notPerApp() throws {
        let send = StreamID.send(id: UUID())
        #expect(send.tenant == nil)
        #expect(!send.isLegacyPerApp)
        #expect(try StreamID("seals").tenant == nil)
        #expect(try !StreamID("skan-model-123").isLegacyPerApp)
    }
}
