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
    static func throughTree(_ json: String, paths: [String] = paths) throws -> (rest: JSONValue, personal: JSONValue) {
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
        #"{"custom_user_id":"u","device":{ "user_agent" : {"a":{"b":[1]}} , "idfa":null,"z":{}},"device2":{"idfa":"x"}}"#,
    ])
    func matchesTheTree(json: String) throws {
        try Self.expectSameAsTree(json, splitter: Self.splitter, paths: Self.paths)
    }

    static func expectSameAsTree(_ json: String, splitter: PersonalJSONSplitter, paths: [String]) throws {
        let split = try #require(splitter.split(Data(json.utf8)))
        let tree = try throughTree(json, paths: paths)
        #expect(try value(split.remaining) == tree.rest)
        var personal = "{"
        for (index, member) in split.personal.enumerated() {
            personal += (index > 0 ? "," : "") + "\"\(member.path)\":" + String(decoding: member.value, as: UTF8.self)
        }
        #expect(try value((personal + "}").utf8) == tree.personal)
    }

    /// Paths where one is personal and also a parent (`device` and `device.ip`: the whole
    /// `device` is personal, as the tree takes it) and a deeper one (`a.b.c`).
    static let overlappingPaths = ["device", "device.ip", "a.b.c"]
    static let overlappingSplitter = PersonalJSONSplitter(paths: overlappingPaths, reserved: ["ledger_personal", "ledger_erased"])

    @Test("the same members as the tree with a path that is personal and a parent, and a deep one", arguments: [
        #"{"device":{"ip":"1.2.3.4","os":"17"},"x":1}"#,
        #"{"device":null,"a":{"b":{"c":{"d":[1,2]},"e":1},"f":{}}}"#,
        #"{"a":{"b":"not an object"},"device":"text"}"#,
        #"{"a":{"b":{"c":null}},"z":[{"a":{"b":{"c":1}}}]}"#,
        #"{ "a" : { "b" : { "c" : "x" } } }"#,
    ])
    func matchesTheTreeWithOverlappingPaths(json: String) throws {
        try Self.expectSameAsTree(json, splitter: Self.overlappingSplitter, paths: Self.overlappingPaths)
    }

    @Test("the quick look says 'no personal member' only when the tree finds none", arguments: [
        (#"{"nothing":"personal","n":[1,2]}"#, true),
        (#"{}"#, true),
        (#"{"devices":{"idfa":"A"},"custom_user":"u"}"#, true),  // names that only start like personal ones
        (#"{"device":{"idfa":"A"}}"#, false),
        (#"{"x":{"custom_user_id":"u"}}"#, false),  // a personal name anywhere: the split decides
        (#"{"dev\u0069ce":{"idfa":"A"}}"#, false),  // an escaped key may spell a personal name
        (#"{"note":"a \"quoted\" word"}"#, false),  // any backslash: the split decides
    ])
    func quickLook(json: String, holdsNone: Bool) throws {
        #expect(Self.splitter.certainlyHoldsNoPersonalMember(Data(json.utf8)) == holdsNone)
        if holdsNone {
            #expect(try Self.throughTree(json).personal == .object([:]))
        }
    }

    /// An opened box's members, as `reveal` scans them before putting them back.
    static func opened(_ plaintext: Data) throws -> [JSONObjectBytes.Member] {
        try #require(JSONObjectBytes.members(of: [UInt8](plaintext)[...]))
    }

    /// The plaintext a box would hold for these members.
    static func plaintext(_ personal: [(path: String, value: ArraySlice<UInt8>)]) -> Data {
        Data(("{" + personal.map { "\"\($0.path)\":" + String(decoding: $0.value, as: UTF8.self) }.joined(separator: ",") + "}").utf8)
    }

    @Test("reveal on the bytes gives back the object that was split, as the tree does", arguments: [
        #"{"device":{"idfa":"A","ip":"1.2.3.4","os":"17"},"x":1}"#,
        "{ \"device\" : {\n \"idfa\" : \"a\\\"b\\\\\" , \"ip\":null, \"user_agent\": {\"name\": \"}{\"} } ,\t\"y\":[1,{\"device\":2}] }",
        #"{"device":"not an object","custom_user_id":"u-1","a":true}"#,
        #"{"device":{"idfa":"A"}}"#,
        #"{"device":{"ip":["1.2.3.4",{"v":"x"}]},"z":[[],{}],"n":-1.5e3}"#,
    ])
    func revealRoundTrips(json: String) throws {
        let split = try #require(Self.splitter.split(Data(json.utf8)))
        let opened = Self.plaintext(split.personal)
        let fields = split.personal.map(\.path).sorted()
        let bytes = try #require(PersonalDataProtection.revealBytes(split.remaining, opened: try Self.opened(opened), fields: fields))
        #expect(try Self.value(bytes) == (try Self.value(json.utf8)))
        let tree = try PersonalDataProtection.revealThroughTree(Data(split.remaining), opened: opened, fields: fields)
        #expect(try Self.value(bytes) == (try Self.value(tree)))
        // Erased: the marker lists the fields, nothing else comes back.
        let erased = try #require(PersonalDataProtection.revealBytes(split.remaining, opened: nil, fields: fields))
        let erasedTree = try PersonalDataProtection.revealThroughTree(Data(split.remaining), opened: nil, fields: fields)
        #expect(try Self.value(erased) == (try Self.value(erasedTree)))
    }

    @Test("top-level values put in the cut member's place make the object insert makes of the rest, or nil where insert decides")
    func replacedMatchesInsert() throws {
        let objects = [
            #"{"ledger_personal":{"box":"x"}}"#,
            #"{"a":1,"ledger_personal":{"box":"x"},"device":{"os":"17"}}"#,
            "{ \"revenue\" : {\"amount\": \"1.5\"} ,\n\"ledger_personal\":{} , \"kind\":\"iap\" }",
            #"{"ledger_personal": {"v": 1}, "z": [1, {"ledger_personal": 2}]}"#,
        ]
        let openedSets = [#"{"transaction_id":"t-1"}"#, #"{"transaction_id":"t\"2","custom_user_id":{"v":[1,2]}}"#]
        for object in objects {
            let cut = try #require(PersonalJSONSplitter.cut("ledger_personal", from: Array(object.utf8)))
            for opened in openedSets {
                let members = try #require(PersonalJSONSplitter.members(of: Array(opened.utf8)[...]))
                let replaced = try #require(cut.replaced(by: members))
                let inserted = try #require(PersonalJSONSplitter.insert(
                    members.map { ([Substring($0.key)], $0.raw) }, into: cut.rest()[...]))
                #expect(try Self.value(replaced) == (try Self.value(inserted)), "\(object) + \(opened)")
                #expect(!String(decoding: replaced, as: UTF8.self).contains("\"box\""), "the envelope is gone")
            }
        }
        let cut = try #require(PersonalJSONSplitter.cut("ledger_personal", from: Array(#"{"a":1,"ledger_personal":{}}"#.utf8)))
        func members(_ json: String) throws -> [JSONObjectBytes.Member] { try #require(PersonalJSONSplitter.members(of: Array(json.utf8)[...])) }
        // Nothing to put in, a dotted path, a name the object holds, a name given twice, a
        // non-ASCII name: insert decides.
        for opened in ["{}", #"{"device.idfa":"X"}"#, #"{"a":2}"#, #"{"t":1,"t":2}"#, "{\"caf\u{E9}\":1}"] {
            #expect(cut.replaced(by: try members(opened)) == nil, "\(opened)")
        }
        // A non-ASCII name among the others (the tree compares names as Unicode text).
        let kelvin = try #require(PersonalJSONSplitter.cut("ledger_personal", from: Array("{\"\u{212A}\":1,\"ledger_personal\":{}}".utf8)))
        #expect(kelvin.replaced(by: try members(#"{"K":1}"#)) == nil)
        // The member given twice is no cut at all.
        #expect(PersonalJSONSplitter.cut("ledger_personal", from: Array(#"{"ledger_personal":1,"ledger_personal":2}"#.utf8)) == nil)
    }

    @Test("reveal makes the objects on the way, and steps aside where a path meets a non-object")
    func revealMakesObjectsOrStepsAside() throws {
        let opened = try Self.opened(Data(#"{"device.idfa":"X","custom_user_id":"u"}"#.utf8))
        let made = try #require(PersonalDataProtection.revealBytes(Array(#"{"a":1}"#.utf8), opened: opened, fields: []))
        #expect(try Self.value(made) == (try Self.value(#"{"a":1,"device":{"idfa":"X"},"custom_user_id":"u"}"#.utf8)))
        #expect(PersonalDataProtection.revealBytes(Array(#"{"device":"text"}"#.utf8), opened: opened, fields: []) == nil)
        #expect(PersonalDataProtection.revealBytes(Array(#"{"device":{"idfa":1}"#.utf8), opened: opened, fields: []) == nil)
        // A name given twice in the object that a value goes into: only the tree decides.
        #expect(PersonalDataProtection.revealBytes(Array(#"{"device":{},"device":{}}"#.utf8), opened: opened, fields: []) == nil)
        // Two opened paths under one object both land in it, and the object's other members stay.
        let merged = try #require(PersonalDataProtection.revealBytes(
            Array(#"{"device":{"os":"17"}}"#.utf8), opened: try Self.opened(Data(#"{"device.idfa":"X","device.ip":"1.2.3.4"}"#.utf8)), fields: []))
        #expect(String(decoding: merged, as: UTF8.self) == #"{"device":{"os":"17","idfa":"X","ip":"1.2.3.4"}}"#)
        // A non-ASCII member name where values go in (the Kelvin sign equals `K` as text): the tree decides.
        #expect(PersonalDataProtection.revealBytes(Array("{\"\u{212A}\":1}".utf8), opened: opened, fields: []) == nil)
        // A non-ASCII name compares as Unicode text in the tree (é composed or not): the bytes path steps aside.
        #expect(PersonalDataProtection.revealBytes(Array(#"{"a":1}"#.utf8), opened: try Self.opened(Data(#"{"caf\#u{E9}.x":"X"}"#.utf8)), fields: []) == nil)
    }

    @Test("steps aside for an escaped key on the way, a repeated path, the ledger's markers, or bytes that do not scan",
          arguments: [
              #"{"dev\u0069ce":{"idfa":"A"}}"#,
              #"{"device":{"idfa":"A","idfa":"B"}}"#,
              #"{"device":{"idfa":"x"},"device":{}}"#,  // a repeated parent: jsonb keeps the last
              #"{"device":{"ip":null,"ip":"1.2.3.4"}}"#,
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

    @Test("the sealed envelope read from its bytes equals the one read through a tree; anything unusual steps aside", arguments: [
        (#"{"box":"AAEC","fields":["custom_user_id","device.idfa"],"key":"0c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d","v":1}"#, true),
        (#"{"v":1,"key":"0C3C2D55-4F3A-4C1E-9D2B-5F0B7A1E2C3D","fields":[],"box":"AAEC"}"#, true),
        (#"{ "box" : "AAEC" , "fields" : [ "device.ip" , "device.idfa" ] , "key" : "not a uuid" }"#, true),
        (#"{"box":"AAEC","fields":["a,b"],"key":"0c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d"}"#, false),
        (#"{"box":"AA\u0045C","fields":[],"key":"0c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d"}"#, false),
        (#"{"box":1,"fields":[],"key":"0c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d"}"#, false),
        (#"{"fields":["device.ip"]}"#, false),
        // An escape where the envelope is read steps aside; one in a member it does not read does not.
        (#"{"box":"AAEC","fields":[],"key":"\u0030c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d"}"#, false),
        (#"{"box":"AAEC","fields":["device.\u0069p"],"key":"0c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d"}"#, false),
        (#"{"box":"AAEC","fields":[],"key":"0c3c2d55-4f3a-4c1e-9d2b-5f0b7a1e2c3d","note":"a\"b"}"#, true),
    ])
    func sealedEnvelope(json: String, readsAsBytes: Bool) throws {
        let bytes = Array(json.utf8)[...]
        let fromBytes = PersonalDataProtection.SealedEnvelope(bytes: bytes)
        #expect((fromBytes != nil) == readsAsBytes)
        if let fromBytes {
            let tree = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            let fromTree = PersonalDataProtection.SealedEnvelope(tree: tree)
            #expect(fromBytes.box == fromTree.box && fromBytes.fields == fromTree.fields && fromBytes.keyID == fromTree.keyID)
        }
    }

    @Test("deep nesting is not scanned (nil, the general path decides) and never exhausts the stack")
    func deepNesting() {
        let depth = 200_000
        let deep = "{\"device\":" + String(repeating: "[", count: depth) + String(repeating: "]", count: depth) + "}"
        #expect(JSONObjectBytes.members(of: Array(deep.utf8)[...]) == nil)
        #expect(Self.splitter.split(Data(deep.utf8)) == nil)
        let shallow = "{\"device\":" + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}"
        #expect(JSONObjectBytes.members(of: Array(shallow.utf8)[...])?.count == 1)
    }

    @Test("the byte search finds a sequence at the start, the middle and the end, and not a partial one")
    func byteSearch() {
        let needle = Array(#""ledger_personal""#.utf8)
        #expect(Data(#""ledger_personal":1"#.utf8).contains(bytes: needle))
        #expect(Data(#"{"a":1,"ledger_personal":{}}"#.utf8).contains(bytes: needle))
        #expect(Data(#"{"x":"ledger_personal""#.utf8).contains(bytes: needle))
        #expect(!Data(#"{"ledger_personal_x":1}"#.utf8).contains(bytes: needle))
        #expect(!Data(#""ledger_persona"#.utf8).contains(bytes: needle))
        #expect(!Data().contains(bytes: needle))
    }
}
