import Foundation
import LedgerDomain
import Testing

@testable import LedgerStore

/// The byte-level splitter that seals personal fields (issue 9) must take out exactly what the
/// tree-based path takes out, and step aside (nil) whenever it cannot be sure.
@Suite("Personal fields split from JSON bytes")
struct PersonalJSONSplitterTests {
    static let paths = ["device.idfa", "device.ip", "device.user_agent", "custom_user_id"]
    static let splitter = PersonalJSONSplitter(paths: paths, reserved: ["ledger_personal", "ledger_erased"])

    static func value(_ bytes: some Sequence<UInt8>) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// What the tree-based path keeps and takes, as typed values.
    static func throughTree(_ json: String) throws -> (rest: JSONValue, personal: JSONValue) {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        var personal: [String: Any] = [:]
        for path in paths {
            if let value = PersonalPaths.remove(path, from: &object) { personal[path] = value }
        }
        return (try value(try JSONSerialization.data(withJSONObject: object)),
                try value(try JSONSerialization.data(withJSONObject: personal)))
    }

    @Test("the same members as the tree-based path, whatever the spacing, escapes and nesting", arguments: [
        #"{"device":{"idfa":"A","ip":"1.2.3.4","os":"17"},"x":1}"#,
        "{ \"device\" : {\n \"idfa\" : \"a\\\"b\\\\\" , \"ip\":null, \"user_agent\": {\"name\": \"}{\"} } ,\t\"y\":[1,{\"device\":2}] }",
        #"{"device":"not an object","custom_user_id":"u-1","a":true}"#,
        #"{"device":{"idfa":"A"}}"#,
        #"{"device":{"ip":["1.2.3.4",{"v":"x"}]},"z":[[],{}],"n":-1.5e3}"#,
        #"{"nothing":"personal"}"#,
        #"{}"#,
    ])
    func matchesTheTree(json: String) throws {
        let split = try #require(Self.splitter.split(Data(json.utf8)))
        let tree = try Self.throughTree(json)
        #expect(try Self.value(split.remaining) == tree.rest)
        var personal = "{"
        for (index, member) in split.personal.enumerated() {
            personal += (index > 0 ? "," : "") + "\"\(member.path)\":" + String(decoding: member.value, as: UTF8.self)
        }
        #expect(try Self.value((personal + "}").utf8) == tree.personal)
    }

    @Test("steps aside for an escaped key on the way, a repeated path, the ledger's markers, or bytes that do not scan",
          arguments: [
              #"{"dev\u0069ce":{"idfa":"A"}}"#,
              #"{"device":{"idfa":"A","idfa":"B"}}"#,
              #"{"ledger_personal":1,"device":{"idfa":"A"}}"#,
              #"{"ledger_erased":[],"x":1}"#,
              #"{"device":{"idfa":"A""#,
              #"{"device":{"idfa":"A"}} trailing"#,
              #"["not","an","object"]"#,
              #"{"device":{"idfa":"A\"#,
          ])
    func stepsAside(json: String) {
        #expect(Self.splitter.split(Data(json.utf8)) == nil)
    }

    @Test("never traps on any prefix of a valid payload")
    func prefixesNeverTrap() {
        let json = Array(#"{"device":{"idfa":"A\"B","ip":[1,{"x":null}],"os":"17"},"custom_user_id":"u","t":true}"#.utf8)
        for length in 0...json.count {
            let split = Self.splitter.split(Data(json[0..<length]))
            #expect((split != nil) == (length == json.count))
        }
    }
}
