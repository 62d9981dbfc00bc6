import Foundation

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
    /// Dotted paths (`device.idfa`) whose values are personal.
    let paths: Set<String>
    /// Every proper prefix of a path (`device`): objects to look inside.
    let prefixes: Set<String>
    /// Top-level member names that make the fast path step aside.
    let reserved: Set<String>

    init(paths: [String], reserved: [String]) {
        self.paths = Set(paths)
        var prefixes = Set<String>()
        for path in paths {
            var prefix = ""
            for part in path.split(separator: ".").dropLast() {
                prefix = prefix.isEmpty ? String(part) : prefix + "." + part
                prefixes.insert(prefix)
            }
        }
        self.prefixes = prefixes
        self.reserved = Set(reserved)
    }

    /// The object without its personal members, and those members (path and raw JSON value, in
    /// the order met). `null` values are not personal data and stay where they are.
    struct Split {
        var remaining: [UInt8]
        var personal: [(path: String, value: ArraySlice<UInt8>)]
    }

    func split(_ data: Data) -> Split? {
        let bytes = [UInt8](data)
        var scanner = Scanner(bytes: bytes)
        scanner.skipWhitespace()
        guard scanner.peek == UInt8(ascii: "{") else { return nil }
        var personal: [(path: String, value: ArraySlice<UInt8>)] = []
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        guard rebuildObject(&scanner, prefix: "", into: &out, personal: &personal) else { return nil }
        scanner.skipWhitespace()
        guard scanner.atEnd, Set(personal.map(\.path)).count == personal.count else { return nil }
        return Split(remaining: out, personal: personal)
    }

    /// Writes the object at the scanner into `out`, leaving out personal members.
    private func rebuildObject(
        _ scanner: inout Scanner, prefix: String, into out: inout [UInt8],
        personal: inout [(path: String, value: ArraySlice<UInt8>)]
    ) -> Bool {
        guard scanner.take(UInt8(ascii: "{")) else { return false }
        out.append(UInt8(ascii: "{"))
        var first = true
        scanner.skipWhitespace()
        if scanner.take(UInt8(ascii: "}")) {
            out.append(UInt8(ascii: "}"))
            return true
        }
        while true {
            scanner.skipWhitespace()
            let keyStart = scanner.index
            guard scanner.skipString() else { return false }
            let keyEnd = scanner.index
            let rawKey = scanner.bytes[(keyStart + 1)..<(keyEnd - 1)]
            scanner.skipWhitespace()
            guard scanner.take(UInt8(ascii: ":")) else { return false }
            scanner.skipWhitespace()
            let valueStart = scanner.index
            // An escaped key may spell a personal name ("dev\u0069ce"): only the tree can tell.
            if rawKey.contains(UInt8(ascii: "\\")) { return false }
            let key = String(decoding: rawKey, as: UTF8.self)
            let path = prefix.isEmpty ? key : prefix + "." + key
            if prefix.isEmpty && reserved.contains(key) { return false }
            if prefixes.contains(path) && scanner.peek == UInt8(ascii: "{") {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(contentsOf: scanner.bytes[keyStart..<keyEnd])
                out.append(UInt8(ascii: ":"))
                guard rebuildObject(&scanner, prefix: path, into: &out, personal: &personal) else { return false }
            } else {
                guard scanner.skipValue() else { return false }
                let value = scanner.bytes[valueStart..<scanner.index]
                if paths.contains(path) && !value.elementsEqual("null".utf8) {
                    personal.append((path, value))
                } else {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    out.append(contentsOf: scanner.bytes[keyStart..<keyEnd])
                    out.append(UInt8(ascii: ":"))
                    out.append(contentsOf: value)
                }
            }
            scanner.skipWhitespace()
            if scanner.take(UInt8(ascii: ",")) { continue }
            guard scanner.take(UInt8(ascii: "}")) else { return false }
            out.append(UInt8(ascii: "}"))
            return true
        }
    }

    /// A cursor over JSON bytes that can step over whole values.
    struct Scanner {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index >= bytes.count }
        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func take(_ byte: UInt8) -> Bool {
            guard peek == byte else { return false }
            index += 1
            return true
        }

        mutating func skipWhitespace() {
            while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        /// Steps over a string, escapes included.
        mutating func skipString() -> Bool {
            guard take(UInt8(ascii: "\"")) else { return false }
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return true
                case UInt8(ascii: "\\"): index += 2
                default: index += 1
                }
            }
            return false
        }

        /// Steps over any value: string, object, array, number or literal.
        mutating func skipValue() -> Bool {
            guard let byte = peek else { return false }
            switch byte {
            case UInt8(ascii: "\""):
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = byte == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                index += 1
                skipWhitespace()
                if take(close) { return true }
                while true {
                    skipWhitespace()
                    if byte == UInt8(ascii: "{") {
                        guard skipString() else { return false }
                        skipWhitespace()
                        guard take(UInt8(ascii: ":")) else { return false }
                        skipWhitespace()
                    }
                    guard skipValue() else { return false }
                    skipWhitespace()
                    if take(UInt8(ascii: ",")) { continue }
                    return take(close)
                }
            default:
                let start = index
                while let next = peek, next != UInt8(ascii: ","), next != UInt8(ascii: "}"), next != UInt8(ascii: "]"),
                    next != 0x20, next != 0x0A, next != 0x0D, next != 0x09
                {
                    index += 1
                }
                return index > start
            }
        }
    }
}

// MARK: - Putting personal members back (reveal)

extension PersonalJSONSplitter {
    /// The top-level members of a JSON object, as raw bytes; nil when it does not scan or a key
    /// is escaped (the tree path decides then).
    static func members(of bytes: ArraySlice<UInt8>) -> [(key: String, raw: ArraySlice<UInt8>, span: Range<Int>)]? {
        var scanner = Scanner(bytes: Array(bytes))
        scanner.skipWhitespace()
        guard scanner.take(UInt8(ascii: "{")) else { return nil }
        var members: [(key: String, raw: ArraySlice<UInt8>, span: Range<Int>)] = []
        scanner.skipWhitespace()
        if scanner.take(UInt8(ascii: "}")) {
            scanner.skipWhitespace()
            return scanner.atEnd ? [] : nil
        }
        while true {
            scanner.skipWhitespace()
            let keyStart = scanner.index
            guard scanner.skipString() else { return nil }
            let rawKey = scanner.bytes[(keyStart + 1)..<(scanner.index - 1)]
            guard !rawKey.contains(UInt8(ascii: "\\")) else { return nil }
            scanner.skipWhitespace()
            guard scanner.take(UInt8(ascii: ":")) else { return nil }
            scanner.skipWhitespace()
            let valueStart = scanner.index
            guard scanner.skipValue() else { return nil }
            let offset = bytes.startIndex
            members.append((String(decoding: rawKey, as: UTF8.self), scanner.bytes[valueStart..<scanner.index][...],
                            (keyStart + offset)..<(scanner.index + offset)))
            scanner.skipWhitespace()
            if scanner.take(UInt8(ascii: ",")) { continue }
            guard scanner.take(UInt8(ascii: "}")) else { return nil }
            scanner.skipWhitespace()
            return scanner.atEnd ? members : nil
        }
    }

    /// `object` without its top-level member `name`, and that member's value; nil when the
    /// member is absent, repeated, or the object does not scan.
    static func extract(_ name: String, from object: [UInt8]) -> (rest: [UInt8], value: ArraySlice<UInt8>)? {
        guard let members = members(of: object[...]) else { return nil }
        let matching = members.filter { $0.key == name }
        guard matching.count == 1, let found = matching.first else { return nil }
        var rest: [UInt8] = [UInt8(ascii: "{")]
        rest.reserveCapacity(object.count)
        var first = true
        for member in members where member.key != name {
            if !first { rest.append(UInt8(ascii: ",")) }
            first = false
            rest.append(contentsOf: object[member.span])
        }
        rest.append(UInt8(ascii: "}"))
        return (rest, found.raw)
    }

    /// Puts `values` (dotted path → raw JSON) into `object`, making the objects on the way, as
    /// `PersonalPaths.set` does in the tree; nil where the bytes disagree with that (a non-object
    /// on a path, a path both set and descended into, bytes that do not scan).
    static func insert(_ values: [(path: [Substring], raw: ArraySlice<UInt8>)], into object: ArraySlice<UInt8>) -> [UInt8]? {
        guard let members = members(of: object) else { return nil }
        var groups: [Substring: [(path: [Substring], raw: ArraySlice<UInt8>)]] = [:]
        var order: [Substring] = []
        for value in values {
            guard let head = value.path.first else { return nil }
            if groups[head] == nil { order.append(head) }
            groups[head, default: []].append((Array(value.path.dropFirst()), value.raw))
        }
        var out: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        func emit(_ key: some StringProtocol, _ value: some Sequence<UInt8>) {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            out.append(UInt8(ascii: "\""))
            out.append(contentsOf: key.utf8)
            out.append(contentsOf: "\":".utf8)
            out.append(contentsOf: value)
        }
        var done = Set<Substring>()
        for member in members {
            guard let group = groups[Substring(member.key)] else {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out.append(contentsOf: object[member.span])
                continue
            }
            guard done.insert(Substring(member.key)).inserted, let value = resolve(group, existing: member.raw) else { return nil }
            emit(member.key, value)
        }
        for key in order where !done.contains(key) {
            guard let value = resolve(groups[key]!, existing: nil) else { return nil }
            emit(key, value)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The value for one member: a leaf replaces it; deeper paths go into it (or a new object).
    private static func resolve(_ group: [(path: [Substring], raw: ArraySlice<UInt8>)], existing: ArraySlice<UInt8>?)
        -> [UInt8]?
    {
        if group.count == 1, group[0].path.isEmpty { return Array(group[0].raw) }
        guard group.allSatisfy({ !$0.path.isEmpty }) else { return nil }
        if let existing {
            guard existing.first == UInt8(ascii: "{") else { return nil }
            return insert(group, into: existing)
        }
        return insert(group, into: Array("{}".utf8)[...])
    }
}
