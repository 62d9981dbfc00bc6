import Foundation
import LedgerDomain

/// The top-level members of a stored payload (``JSONObjectBytes``): for reducers that need two
/// or three fields of a large payload.
///
/// Payloads in the log were checked when appended, so this meets only JSON the catalog wrote; it
/// still gives up (nil) on anything it does not read exactly as `JSONDecoder` would (an escaped
/// key, a repeated key, bytes that do not scan), and the caller then decodes the usual way.
struct PayloadMembers {
    /// The payload's bytes.
    private let bytes: [UInt8]
    /// Each member's key (between its quotes), value, and span (key's quote to value's end), as
    /// offsets in ``bytes``, in stored order. Offsets, not slices: a slice retains the array, and
    /// two retains per member were a visible part of a quick read.
    private let places: [JSONObjectBytes.Place]

    init?(_ data: Data) {
        let bytes = data.withUnsafeBytes { [UInt8]($0) }
        var places: [JSONObjectBytes.Place] = []
        places.reserveCapacity(16)
        // A repeated key: which one counts is the decoder's business.
        let scanned = bytes.withUnsafeBufferPointer { buffer in
            JSONObjectBytes.memberOffsets(of: buffer, into: &places) && !JSONObjectBytes.repeatsKey(places, in: buffer)
        }
        guard scanned else { return nil }
        self.bytes = bytes
        self.places = places
    }

    /// How many members the payload has.
    var count: Int { places.count }

    /// The raw value of the member named `name`, if present.
    func raw(_ name: StaticString) -> ArraySlice<UInt8>? {
        // The name's bytes as they are (an array of them per lookup was most of a lookup).
        name.withUTF8Buffer { wanted in
            places.first { bytes[$0.key].elementsEqual(wanted) }.map { bytes[$0.value] }
        }
    }

    /// A JSON object of only the members named in `names` (in their stored order): what a slim
    /// `Decodable` view of the payload needs, without the rest.
    func object(keeping names: Set<String>) -> Data {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for place in places where names.contains(String(decoding: bytes[place.key], as: UTF8.self)) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: bytes[place.span])  // `"key":value`, as stored
        }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    /// `true` / `false`; nil for anything else.
    static func bool(_ raw: ArraySlice<UInt8>) -> Bool? {
        if raw.elementsEqual("true".utf8) { return true }
        if raw.elementsEqual("false".utf8) { return false }
        return nil
    }

    /// An integer written as plain digits (an optional `-`); nil for anything else.
    static func integer(_ raw: ArraySlice<UInt8>) -> Int? {
        guard !raw.isEmpty, raw.count <= 18 else { return nil }
        var digits = raw[...]
        let negative = digits.first == UInt8(ascii: "-")
        if negative { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.allSatisfy({ (48...57).contains($0) }) else { return nil }
        let value = digits.reduce(0) { $0 * 10 + Int($1 - 48) }
        return negative ? -value : value
    }

    /// `null`.
    static func isNull(_ raw: ArraySlice<UInt8>) -> Bool { raw.elementsEqual("null".utf8) }
}
