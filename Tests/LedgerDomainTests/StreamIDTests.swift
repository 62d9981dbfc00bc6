import Foundation
import LedgerDomain
import Testing

@Suite("Stream ids")
struct StreamIDTests {
    @Test("device streams are device-<app>-<device>")
    func deviceStream() throws {
        let stream = try StreamID.device(app: AppID("com.example.game"), device: DeviceID("4f1c-99"))
        #expect(stream.rawValue == "device-com.example.game-4f1c-99")
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
        #expect(try StreamID.decisions(app: app, device: DeviceID("d1")).rawValue == "decision-1234567890-d1")
        let skan = try StreamID.skanPostbacks(app: app, transactionID: "6aafb7a5-0170-41b5-bbe4-fe71dedf1e30")
        #expect(skan.rawValue == "skan-1234567890-6aafb7a5-0170-41b5-bbe4-fe71dedf1e30")
        #expect(skan.category == "skan")
        #expect(throws: RuleViolation.self) { try StreamID.skanPostbacks(app: app, transactionID: "a b") }
    }

    @Test("category is the text before the first dash, or the whole id", arguments: [
        ("device-app-dev", "device"), ("send-6f9619ff-8b86", "send"), ("seals", "seals"), ("a-", "a"),
    ])
    func category(_ raw: String, _ expected: String) throws {
        #expect(try StreamID(raw).category == expected)
    }

    @Test("stream ids follow the store's syntax", arguments: ["", "-device", "device app", "dévice-x", String(repeating: "a", count: 257)])
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
}
