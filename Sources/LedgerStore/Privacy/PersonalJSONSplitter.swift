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
