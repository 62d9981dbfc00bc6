import Foundation
import LedgerDomain

/// Why ``ProviderJSONReader`` refused its input: a stable rule and the byte offset.
package struct ProviderJSONSyntaxError: Error, Sendable, Hashable {
    /// `not_json` (syntax, bad UTF-8), `too_deep` (nesting beyond the limit) or `too_large`.
    package var rule: String
    /// The byte offset where reading stopped.
    package var offset: Int
    /// What was wrong there, for people.
    package var reason: String
}

/// A strict RFC 8259 reader for providers' answers, a tree built on ``JSONTokenizer``. It never
/// traps: every malformed input ends in a ``ProviderJSONSyntaxError``, nesting is bounded before
/// it can exhaust the stack, and numbers are kept as their text. (`package`: the HTTP API reads
/// request bodies with it too.)
package enum ProviderJSONReader {
    /// How much a caller accepts.
    package struct Limits: Sendable {
        /// Deeper nesting is refused (`too_deep`).
        var maxDepth: Int
        /// Larger input is refused (`too_large`) before it is read; `nil` for no limit.
        var maxBytes: Int?
        /// Whether a leading UTF-8 byte order mark is stepped over (RFC 8259 §8.1 lets a reader
        /// ignore it) rather than refused.
        var skipsByteOrderMark: Bool

        /// Limits with these values.
        package init(maxDepth: Int, maxBytes: Int?, skipsByteOrderMark: Bool) {
            self.maxDepth = maxDepth
            self.maxBytes = maxBytes
            self.skipsByteOrderMark = skipsByteOrderMark
        }

        /// Google and Apple: the deepest answer needs 3 levels (object → array → object); 32
        /// leaves room while keeping recursion shallow. A BOM is stepped over.
        static let googleApple = Limits(maxDepth: 32, maxBytes: nil, skipsByteOrderMark: true)
        /// Branch and Singular: no answer nests more than four levels and both answer a few
        /// hundred bytes, so 64 levels and 4 MiB. A BOM is refused.
        static let branchSingular = Limits(maxDepth: 64, maxBytes: 4 << 20, skipsByteOrderMark: false)
    }

    /// Parses one JSON text (any value at top level), allowing only whitespace around it.
    package static func parse(_ data: Data, limits: Limits) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        if let maxBytes = limits.maxBytes, data.count > maxBytes {
            throw ProviderJSONSyntaxError(rule: "too_large", offset: 0, reason: "more than \(maxBytes) bytes")
        }
        let bytes = [UInt8](data)
        let read = bytes.withUnsafeBufferPointer { buffer in
            var tokenizer = JSONTokenizer(buffer, maximumDepth: limits.maxDepth)
            if limits.skipsByteOrderMark, buffer.starts(with: [0xEF, 0xBB, 0xBF]) { tokenizer.offset = 3 }
            return Result { () throws(JSONSyntaxError) -> ProviderJSON in
                tokenizer.skipWhitespace()
                let value = try value(&tokenizer, depth: 1)
                try tokenizer.end()
                return value
            }
        }
        do {
            return try read.get()
        } catch {
            let rule = if case .tooDeep = error.reason { "too_deep" } else { "not_json" }
            throw ProviderJSONSyntaxError(rule: rule, offset: error.offset, reason: error.reason.text)
        }
    }

    /// Parses UTF-8 text.
    static func parse(_ text: String, limits: Limits) throws(ProviderJSONSyntaxError) -> ProviderJSON {
        try parse(Data(text.utf8), limits: limits)
    }

    /// The value that is next, as a tree; `depth` is the depth a container here has.
    private static func value(_ tokenizer: inout JSONTokenizer, depth: Int) throws(JSONSyntaxError) -> ProviderJSON {
        switch tokenizer.peek {
        case UInt8(ascii: "{"):
            var members: [ProviderJSONMember] = []
            if try tokenizer.open(depth: depth) {
                repeat {
                    let key = tokenizer.text(try tokenizer.key())
                    members.append(ProviderJSONMember(key: key, value: try value(&tokenizer, depth: depth + 1)))
                } while try tokenizer.nextItem(closing: UInt8(ascii: "}"))
            }
            return .object(members)
        case UInt8(ascii: "["):
            var items: [ProviderJSON] = []
            if try tokenizer.open(depth: depth) {
                repeat {
                    items.append(try value(&tokenizer, depth: depth + 1))
                } while try tokenizer.nextItem(closing: UInt8(ascii: "]"))
            }
            return .array(items)
        default:
            let token = try tokenizer.scalar()
            switch token.kind {
            case .string: return .string(tokenizer.text(token))
            case .number: return .number(String(decoding: tokenizer.slice(token.range), as: UTF8.self))
            case .true: return .bool(true)
            case .false: return .bool(false)
            case .null, .object, .array: return .null
            }
        }
    }
}
