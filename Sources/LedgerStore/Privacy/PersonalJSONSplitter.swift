import Foundation
import LedgerDomain

/// Takes an event's personal members out of its JSON bytes without building a tree of it.
///
/// Sealing runs on every append of an event with personal fields. Through `JSONSerialization`
/// (parse into `[String: Any]`, remove, write back) it cost about half an append's CPU on Linux,
/// most of it in bridging and dynamic casts; here the payload is scanned once, the objects on the
/// way to a personal path are written again member by member, and every other byte is copied.
///
/// Anything unusual (an escaped key on the way, a personal path given twice, a member named like
/// the ledger's own markers, bytes that do not scan) returns nil, and the caller takes the
/// tree-based path, which handles every input the same way it always did.
struct PersonalJSONSplitter: Sendable {
    /// One step of the personal paths: a member name, whether the value under it is personal,
    /// and the names below it (for `device.idfa`: `device`, not personal, with child `idfa`).
    /// Keys are matched as bytes against these few names: no `String` per member, no hashing.
    struct PathNode: Sendable {
        var name: [UInt8]
        /// The dotted path from the top (`device.idfa`).
        var path: String
        var isPersonal: Bool
        var children: [PathNode]

        /// The index of the child named by `key`'s bytes, if any.
        func childIndex(named key: UnsafeBufferPointer<UInt8>) -> Int? {
            children.firstIndex { $0.name.count == key.count && $0.name.elementsEqual(key) }
        }
    }

    /// The top-level names on the way to (or at) a personal path.
    let root: PathNode
    /// Their names' bytes (``certainlyHoldsNoPersonalMember(_:)`` runs on every sealed append).
    private let topNames: [[UInt8]]
    /// Top-level member names that make the fast path step aside.
    let reserved: [[UInt8]]
    /// Whether every path is letters, digits, `_` and `.`, so it is written into JSON unescaped;
    /// when not, the bytes path is not used for these paths at all.
    let pathsArePlain: Bool

    init(paths: [String], reserved: [String]) {
        var root = PathNode(name: [], path: "", isPersonal: false, children: [])
        for path in paths {
            Self.insert(path.split(separator: ".").map(String.init), prefix: "", into: &root)
        }
        self.root = root
        self.topNames = root.children.map(\.name)
        self.reserved = reserved.map { Array($0.utf8) }
        self.pathsArePlain = paths.allSatisfy(Self.isPlain)
    }

    private static func insert(_ parts: [String], prefix: String, into node: inout PathNode) {
        guard let first = parts.first else { return }
        let path = prefix.isEmpty ? first : prefix + "." + first
        let name = Array(first.utf8)
        let index = node.children.firstIndex { $0.name == name } ?? {
            node.children.append(PathNode(name: name, path: path, isPersonal: false, children: []))
            return node.children.count - 1
        }()
        if parts.count == 1 {
            node.children[index].isPersonal = true
        } else {
            insert(Array(parts.dropFirst()), prefix: path, into: &node.children[index])
        }
    }

    /// Letters, digits, `_` and `.`: text that needs no escaping inside a JSON string.
    static func isPlain(_ text: String) -> Bool {
        text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }

    /// `["a","b"]` for plain texts (see ``isPlain(_:)``), as the envelope's and the erased
    /// marker's field lists are written.
    static func plainArray(_ texts: [String]) -> String {
        "[" + texts.map { "\"\($0)\"" }.joined(separator: ",") + "]"
    }

    /// The object without its personal members, and those members (path and raw JSON value, in
    /// the order met). `null` values are not personal data and stay where they are.
    struct Split {
        var remaining: [UInt8]
        var personal: [(path: String, value: ArraySlice<UInt8>)]
    }

    /// True when `data` certainly holds no personal member: no backslash anywhere (so no key is
    /// escaped) and no top-level personal name appears as a quoted string. A cheap look before
    /// ``split(_:)`` for payloads that carry none (false says nothing).
    func certainlyHoldsNoPersonalMember(_ data: Data) -> Bool {
        let names = topNames
        return data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Bool in
            let count = bytes.count
            var index = 0
            while index < count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\") { return false }
                if byte == UInt8(ascii: "\"") {
                    for name in names where index + name.count + 1 < count && bytes[index + name.count + 1] == UInt8(ascii: "\"") {
                        var matches = true
                        for offset in 0..<name.count where bytes[index + 1 + offset] != name[offset] {
                            matches = false
                            break
                        }
                        if matches { return false }
                    }
                }
                index += 1
            }
            return true
        }
    }

    func split(_ data: Data) -> Split? {
        let bytes = [UInt8](data)
        var remaining: [UInt8] = []
        remaining.reserveCapacity(bytes.count)
        var personal: [(path: String, value: Range<Int>)] = []
        let copied = bytes.withUnsafeBufferPointer { buffer in
            var tokenizer = JSONTokenizer(buffer, maximumDepth: JSONObjectBytes.maximumDepth)
            tokenizer.skipWhitespace()
            guard (try? copyObject(&tokenizer, node: root, depth: 1, into: &remaining, personal: &personal)) == true else { return false }
            return (try? tokenizer.end()) != nil
        }
        guard copied else { return nil }
        return Split(remaining: remaining, personal: personal.map { ($0.path, bytes[$0.value]) })
    }

    /// Copies the object at `tokenizer` into `out` without its personal members, in one pass: the
    /// objects on the way to a personal path are copied the same way, every other member byte
    /// for byte. False (or a throw) when the bytes are not JSON, a key is escaped, the object
    /// nests deeper than ``JSONObjectBytes/maximumDepth``, a top-level member is named like a
    /// reserved marker, or a name on a personal path appears twice in one object
    /// (`{"device":{"idfa":"x"},"device":{}}`: only the tree can say which one counts; jsonb keeps
    /// the last).
    private func copyObject(
        _ tokenizer: inout JSONTokenizer, node: PathNode, depth: Int, into out: inout [UInt8],
        personal: inout [(path: String, value: Range<Int>)]
    ) throws(JSONSyntaxError) -> Bool {
        let bytes = tokenizer.bytes
        guard tokenizer.peek == UInt8(ascii: "{") else { return false }
        out.append(UInt8(ascii: "{"))
        guard try tokenizer.open(depth: depth) else {
            out.append(UInt8(ascii: "}"))
            return true
        }
        var first = true
        // The children of `node` met so far, one bit each (a node with more than 64 steps aside).
        var seen: UInt64 = 0
        guard node.children.count <= 64 else { return false }
        repeat {
            let key = try tokenizer.key()
            guard !key.hasEscapes else { return false }
            let keyBytes = tokenizer.slice(key.body)
            if depth == 1, reserved.contains(where: { $0.elementsEqual(keyBytes) }) { return false }
            let valueStart = tokenizer.offset
            let stepIndex = node.childIndex(named: keyBytes)
            if let stepIndex {
                guard seen & (1 << stepIndex) == 0 else { return false }
                seen |= 1 << stepIndex
            }
            let step = stepIndex.map { node.children[$0] }
            if let step, !step.isPersonal, !step.children.isEmpty, tokenizer.peek == UInt8(ascii: "{") {
                // On the way to a personal path: copied member by member.
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[key.range.lowerBound..<valueStart]))  // `"key":`
                guard try copyObject(&tokenizer, node: step, depth: depth + 1, into: &out, personal: &personal) else { return false }
            } else {
                let value = try tokenizer.skipValue(depth: depth + 1)
                if let step, step.isPersonal, value.kind != .null {
                    personal.append((step.path, value.range))
                } else {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[key.range.lowerBound..<value.range.upperBound]))
                }
            }
        } while try tokenizer.nextItem(closing: UInt8(ascii: "}"))
        out.append(UInt8(ascii: "}"))
        return true
    }

    /// One member of a scanned object (see ``JSONObjectBytes/Member``).
    typealias Member = JSONObjectBytes.Member

    /// The members of the JSON object that is all of `bytes` (see ``JSONObjectBytes/members(of:)``).
    static func members(of bytes: ArraySlice<UInt8>) -> [Member]? { JSONObjectBytes.members(of: bytes) }
}

// MARK: - Putting personal members back (reveal)

extension PersonalJSONSplitter {
    /// An object whose top-level member `name` was found once: its value, the object without it
    /// (``rest()``), or the object with it replaced (``replaced(by:)``), from one scan.
    struct Cut {
        /// The whole object.
        let object: [UInt8]
        /// Its top-level members, in order.
        let members: [JSONObjectBytes.Member]
        /// Which of them was cut.
        let index: Int

        /// The cut member's value.
        var value: ArraySlice<UInt8> { members[index].raw }

        /// The object without the cut member.
        func rest() -> [UInt8] {
            var rest: [UInt8] = [UInt8(ascii: "{")]
            rest.reserveCapacity(object.count)
            for (position, member) in members.enumerated() where position != index {
                if rest.count > 1 { rest.append(UInt8(ascii: ",")) }
                rest.append(contentsOf: object[member.span])
            }
            rest.append(UInt8(ascii: "}"))
            return rest
        }

        /// The object with the cut member replaced, where it stood, by the top-level `values`:
        /// the same object ``insert(_:into:)`` makes of ``rest()`` and them (members in another
        /// order), with one copy and no second scan. Opening an event whose kept fields are all
        /// top-level (a reader keeping only `transaction_id`) takes this way. Nil, and `insert`
        /// decides, unless there is a value, every value's name is ASCII, has no `.`, is given
        /// once and is not another member's, and every other member's name is ASCII.
        func replaced(by values: [JSONObjectBytes.Member]) -> [UInt8]? {
            guard !values.isEmpty else { return nil }
            for (position, member) in members.enumerated() where position != index {
                guard member.keyBytes.allSatisfy({ $0 < 0x80 }),
                      !values.contains(where: { $0.keyBytes.elementsEqual(member.keyBytes) }) else { return nil }
            }
            for (position, value) in values.enumerated() {
                guard !value.keyBytes.isEmpty, value.keyBytes.allSatisfy({ $0 < 0x80 && $0 != UInt8(ascii: ".") }),
                      !values[..<position].contains(where: { $0.keyBytes.elementsEqual(value.keyBytes) })
                else { return nil }
            }
            let span = members[index].span
            var out: [UInt8] = []
            out.reserveCapacity(object.count - span.count + values.reduce(0) { $0 + $1.keyBytes.count + $1.raw.count + 4 })
            out.append(contentsOf: object[..<span.lowerBound])
            for (position, value) in values.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "\""))
                out.append(contentsOf: value.keyBytes)
                out.append(contentsOf: "\":".utf8)
                out.append(contentsOf: value.raw)
            }
            out.append(contentsOf: object[span.upperBound...])
            return out
        }
    }

    /// `object`'s top-level member `name`, found; nil when it is absent, repeated, or the object
    /// does not scan.
    static func cut(_ name: String, from object: [UInt8]) -> Cut? {
        guard let members = members(of: object[...]) else { return nil }
        // Compared as bytes (the marker names are ASCII with no other canonical spelling).
        var found: Int?
        for (position, member) in members.enumerated() where member.keyBytes.elementsEqual(name.utf8) {
            guard found == nil else { return nil }
            found = position
        }
        guard let found else { return nil }
        return Cut(object: object, members: members, index: found)
    }

    /// Puts `values` (dotted path → raw JSON) into `object`, making the objects on the way, as
    /// `PersonalPaths.set` does in the tree; nil where the bytes disagree with that (a non-object
    /// on a path, a path both set and descended into, bytes that do not scan).
    static func insert(_ values: [(path: [Substring], raw: ArraySlice<UInt8>)], into object: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(object.count + values.reduce(16) { $0 + $1.raw.count + 24 })
        return write(values, into: object, to: &out) ? out : nil
    }

    /// ``insert(_:into:)``, written onto the end of `out`: the objects on the way are written in
    /// place, not built apart and copied in. False where `insert` gives nil.
    private static func write(_ values: [(path: [Substring], raw: ArraySlice<UInt8>)], into object: ArraySlice<UInt8>,
                              to out: inout [UInt8]) -> Bool {
        guard let members = members(of: object) else { return false }
        // Grouped by first name, in order of first appearance. A handful of names: arrays and
        // byte comparisons, not a dictionary of substrings (a third of opening an event, before).
        var heads: [Substring] = []
        var groups: [[(path: [Substring], raw: ArraySlice<UInt8>)]] = []
        for value in values {
            // Non-ASCII names compare as Unicode text in the tree; only the tree decides those.
            guard let head = value.path.first, head.utf8.allSatisfy({ $0 < 0x80 }) else { return false }
            let below = (path: Array(value.path.dropFirst()), raw: value.raw)
            if let index = heads.firstIndex(where: { $0.utf8.elementsEqual(head.utf8) }) {
                groups[index].append(below)
            } else {
                heads.append(head)
                groups.append([below])
            }
        }
        out.append(UInt8(ascii: "{"))
        var first = true
        var done = [Bool](repeating: false, count: heads.count)
        for member in members {
            // A non-ASCII name may equal a path's name as Unicode text (the Kelvin sign is `K`),
            // which the tree would merge: only the tree decides.
            guard member.keyBytes.allSatisfy({ $0 < 0x80 }) else { return false }
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            guard let index = heads.firstIndex(where: { $0.utf8.elementsEqual(member.keyBytes) }) else {
                out.append(contentsOf: object[member.span])
                continue
            }
            guard !done[index] else { return false }
            done[index] = true
            appendKey(heads[index], to: &out)
            guard writeValue(groups[index], existing: member.raw, to: &out) else { return false }
        }
        for index in heads.indices where !done[index] {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            appendKey(heads[index], to: &out)
            guard writeValue(groups[index], existing: nil, to: &out) else { return false }
        }
        out.append(UInt8(ascii: "}"))
        return true
    }

    private static func appendKey(_ key: Substring, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: key.utf8)
        out.append(contentsOf: "\":".utf8)
    }

    /// The value for one member: a leaf replaces it; deeper paths go into it (or a new object).
    private static func writeValue(_ group: [(path: [Substring], raw: ArraySlice<UInt8>)], existing: ArraySlice<UInt8>?,
                                   to out: inout [UInt8]) -> Bool {
        if group.count == 1, group[0].path.isEmpty {
            out.append(contentsOf: group[0].raw)
            return true
        }
        guard group.allSatisfy({ !$0.path.isEmpty }) else { return false }
        if let existing {
            guard existing.first == UInt8(ascii: "{") else { return false }
            return write(group, into: existing, to: &out)
        }
        return write(group, into: emptyObject[...], to: &out)
    }

    private static let emptyObject = Array("{}".utf8)
}
