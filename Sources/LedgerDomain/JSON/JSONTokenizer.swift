/// Why a JSON text was refused: the byte offset where reading stopped, and what was wrong there.
public struct JSONSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong at ``offset``.
    public enum Reason: Sendable, Hashable {
        /// The text ended inside a value.
        case unexpectedEnd
        /// A byte that cannot start or continue anything here.
        case unexpectedByte(UInt8)
        /// An object member that does not start with a string key.
        case expectedKey
        /// A key not followed by `:`.
        case expectedColon
        /// A member or element followed by neither `,` nor the container's closing byte.
        case expectedCommaOr(UInt8)
        /// A `t`, `f` or `n` that does not spell `true`, `false` or `null`.
        case invalidLiteral
        /// A number outside RFC 8259's grammar (a missing digit; leading zeros end the number).
        case invalidNumber
        /// A raw control character (below 0x20) inside a string.
        case controlCharacter
        /// A backslash followed by anything but `" \ / b f n r t u`, or a `\u` without four hex digits.
        case invalidEscape
        /// A `\u` surrogate without its other half.
        case unpairedSurrogate
        /// Bytes inside a string that are not UTF-8.
        case invalidUTF8
        /// A string with no closing quote.
        case unterminatedString
        /// Containers nested deeper than the tokenizer's limit.
        case tooDeep(limit: Int)
        /// Bytes after the one JSON value (whitespace aside).
        case trailingText

        /// The reason in words, for people.
        public var text: String {
            switch self {
            case .unexpectedEnd: "unexpected end of input"
            case .unexpectedByte(let byte): "unexpected byte \(byte)"
            case .expectedKey: "expected a key"
            case .expectedColon: "expected :"
            case .expectedCommaOr(let close): "expected , or \(Character(Unicode.Scalar(close)))"
            case .invalidLiteral: "expected true, false or null"
            case .invalidNumber: "expected a digit"
            case .controlCharacter: "control character in string"
            case .invalidEscape: "unknown escape"
            case .unpairedSurrogate: "unpaired surrogate"
            case .invalidUTF8: "invalid UTF-8"
            case .unterminatedString: "unterminated string"
            case .tooDeep(let limit): "nested deeper than \(limit)"
            case .trailingText: "text after the JSON value"
            }
        }
    }

    /// The byte offset where reading stopped.
    public var offset: Int
    /// What was wrong there.
    public var reason: Reason

    /// An error at `offset` for `reason`.
    public init(offset: Int, reason: Reason) {
        self.offset = offset
        self.reason = reason
    }

    /// The reason and the offset, for people.
    public var description: String { "\(reason.text) at byte \(offset)" }
}

/// One token of a JSON text: what kind of value it is and its exact bytes.
public struct JSONToken: Sendable, Hashable {
    /// The kinds of JSON value.
    public enum Kind: Sendable, Hashable {
        /// An object, `{` to `}`.
        case object
        /// An array, `[` to `]`.
        case array
        /// A string, quotes included.
        case string
        /// A number, as written.
        case number
        /// `true`.
        case `true`
        /// `false`.
        case `false`
        /// `null`.
        case null
    }

    /// The value's kind.
    public var kind: Kind
    /// The value's bytes exactly as written (a string's quotes included), as offsets in the
    /// tokenized buffer.
    public var range: Range<Int>
    /// Whether a string holds a backslash escape (its body then differs from its text).
    public var hasEscapes: Bool

    /// A string's bytes between its quotes; the whole range for any other kind.
    public var body: Range<Int> { kind == .string ? (range.lowerBound + 1)..<(range.upperBound - 1) : range }
}

/// The one strict RFC 8259 tokenizer under every reader that needs a JSON text's exact bytes:
/// providers' answers, SKAN postbacks, `jsonb` printing, the personal-field splitter and the
/// payload member scans.
///
/// It works on a buffer, allocates nothing, and never traps: every value it steps over is checked
/// against the grammar (escapes, surrogate pairs, UTF-8 inside strings, numbers without leading
/// zeros), nesting is bounded by ``maximumDepth`` before it can exhaust the stack, and a refusal
/// is a ``JSONSyntaxError`` with its byte offset. Tokens carry their exact byte ranges, so numbers
/// keep their text and strings can be read raw or decoded; each reader keeps its own policy
/// (duplicate keys, exponents, a byte order mark) on top.
public struct JSONTokenizer {
    /// The bytes being read.
    public let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read, from the buffer's start.
    public var offset: Int
    /// Containers nested deeper than this are refused (the top-level value's depth is 1).
    public let maximumDepth: Int

    /// A tokenizer at `offset` of `bytes`, refusing containers deeper than `maximumDepth`.
    public init(_ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int, offset: Int = 0) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.offset = offset
    }

    /// The next byte, if any.
    public var peek: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    /// Whether every byte has been read.
    public var atEnd: Bool { offset >= bytes.count }

    /// Steps over `byte` if it is next; whether it was.
    public mutating func take(_ byte: UInt8) -> Bool {
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    /// Steps over JSON whitespace (space, tab, line feed, carriage return).
    public mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x09, 0x0A, 0x0D: offset += 1
            default: return
            }
        }
    }

    /// An error here (or at `at`).
    func fail(_ reason: JSONSyntaxError.Reason, at: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(offset: at ?? offset, reason: reason)
    }

    /// Requires that only whitespace is left.
    /// - Throws: ``JSONSyntaxError/Reason/trailingText``.
    public mutating func end() throws(JSONSyntaxError) {
        skipWhitespace()
        guard atEnd else { throw fail(.trailingText) }
    }

    /// Steps over one whole value of any kind, checking it, and gives its token. `depth` is the
    /// depth a container here would have (1 for the top-level value).
    public mutating func skipValue(depth: Int) throws(JSONSyntaxError) -> JSONToken {
        guard let byte = peek else { throw fail(.unexpectedEnd) }
        guard byte == UInt8(ascii: "{") || byte == UInt8(ascii: "[") else { return try scalar() }
        let start = offset
        let isObject = byte == UInt8(ascii: "{")
        if try open(depth: depth) {
            repeat {
                if isObject { _ = try key() }
                _ = try skipValue(depth: depth + 1)
            } while try nextItem(closing: isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
        return JSONToken(kind: isObject ? .object : .array, range: start..<offset, hasEscapes: false)
    }

    /// Steps over the `{` or `[` that is next (the caller has looked) and the whitespace after it;
    /// false, with the matching closing byte taken too, when the container is empty.
    /// - Throws: ``JSONSyntaxError/Reason/tooDeep(limit:)`` past ``maximumDepth``.
    public mutating func open(depth: Int) throws(JSONSyntaxError) -> Bool {
        guard depth <= maximumDepth else { throw fail(.tooDeep(limit: maximumDepth)) }
        let close = bytes[offset] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        offset += 1
        skipWhitespace()
        return !take(close)
    }

    /// Reads a member's `"key" :` and the whitespace around it, leaving the tokenizer at the value.
    public mutating func key() throws(JSONSyntaxError) -> JSONToken {
        skipWhitespace()
        guard peek == UInt8(ascii: "\"") else { throw fail(atEnd ? .unexpectedEnd : .expectedKey) }
        let key = try string()
        skipWhitespace()
        guard take(UInt8(ascii: ":")) else { throw fail(atEnd ? .unexpectedEnd : .expectedColon) }
        skipWhitespace()
        return key
    }

    /// After a member or element: true past a `,` (and the whitespace after it), false past
    /// `closing`.
    public mutating func nextItem(closing: UInt8) throws(JSONSyntaxError) -> Bool {
        skipWhitespace()
        guard let byte = peek else { throw fail(.unexpectedEnd) }
        offset += 1
        if byte == UInt8(ascii: ",") {
            skipWhitespace()
            return true
        }
        guard byte == closing else { throw fail(.expectedCommaOr(closing), at: offset - 1) }
        return false
    }

    /// Reads the string, number or literal that is next.
    public mutating func scalar() throws(JSONSyntaxError) -> JSONToken {
        guard let byte = peek else { throw fail(.unexpectedEnd) }
        switch byte {
        case UInt8(ascii: "\""): return try string()
        case UInt8(ascii: "t"): return try literal("true", .true)
        case UInt8(ascii: "f"): return try literal("false", .false)
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail(.unexpectedByte(byte))
        }
    }

    private mutating func literal(_ word: StaticString, _ kind: JSONToken.Kind) throws(JSONSyntaxError) -> JSONToken {
        let start = offset
        let count = word.utf8CodeUnitCount
        guard start + count <= bytes.count else { throw fail(.invalidLiteral) }
        for index in 0..<count where bytes[start + index] != word.utf8Start[index] { throw fail(.invalidLiteral) }
        offset += count
        return JSONToken(kind: kind, range: start..<offset, hasEscapes: false)
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, as written. A leading zero ends
    /// the number, so `01` leaves `1` for the caller to refuse.
    public mutating func number() throws(JSONSyntaxError) -> JSONToken {
        let start = offset
        _ = take(UInt8(ascii: "-"))
        guard let first = peek, Self.isDigit(first) else { throw fail(.invalidNumber) }
        offset += 1
        if first != UInt8(ascii: "0") { skipDigits() }
        if take(UInt8(ascii: ".")) {
            guard skipDigits() else { throw fail(.invalidNumber) }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard skipDigits() else { throw fail(.invalidNumber) }
        }
        return JSONToken(kind: .number, range: start..<offset, hasEscapes: false)
    }

    /// Steps over digits; whether there was one.
    @discardableResult
    private mutating func skipDigits() -> Bool {
        let start = offset
        while let byte = peek, Self.isDigit(byte) { offset += 1 }
        return offset > start
    }

    /// Whether `byte` is an ASCII digit.
    public static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// The bytes of `range`, as a buffer (no copy).
    public func slice(_ range: Range<Int>) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: bytes[range]) }
}
