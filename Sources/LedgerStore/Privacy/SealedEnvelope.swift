import Foundation
import LedgerDomain
import LedgerPostgres

extension PersonalDataProtection {
    /// The sealed envelope (`{"box":…,"fields":[…],"key":…,"v":1}`), read from its bytes when they
    /// are plain (no escape in what it reads: names, box, key, fields), else from a parsed tree.
    ///
    /// Read from bytes, the box stays bytes (its Base64 is decoded from them) and the field list
    /// stays its text until asked for: only an erased event and the tree path need the names, and
    /// making a `String` of each was a visible part of opening an event.
    struct SealedEnvelope {
        /// The box's Base64 text.
        var box: ArraySlice<UInt8>
        var keyID: UUID?
        /// The sealed fields' dotted paths, as UTF-8.
        private var fieldBytes: [ArraySlice<UInt8>]

        /// The sealed fields' dotted paths.
        var fields: [String] { fieldBytes.map { String(decoding: $0, as: UTF8.self) } }

        init(tree: [String: Any]) {
            box = Array((tree["box"] as? String ?? "").utf8)[...]
            fieldBytes = (tree["fields"] as? [String] ?? []).map { Array($0.utf8)[...] }
            keyID = (tree["key"] as? String).flatMap(UUID.init(uuidString:))
        }

        /// Nil when the bytes are not the plain form the sealer writes, with no escape in what it
        /// reads (the tree then decides).
        init?(bytes: ArraySlice<UInt8>) {
            // Every member read here is checked for escapes where it is read (names by the scan,
            // values by `plainStringBody`); no separate pass over the bytes for a backslash.
            guard let members = PersonalJSONSplitter.members(of: bytes) else { return nil }
            var box: ArraySlice<UInt8>?
            var items: [ArraySlice<UInt8>]?
            var keyID: UUID?
            for member in members {
                // The names as bytes: no `String` per member.
                let name = member.keyBytes
                if name.elementsEqual("box".utf8) {
                    box = JSONObjectBytes.plainStringBody(member.raw)
                } else if name.elementsEqual("key".utf8) {
                    // The canonical form the sealer writes, read digit by digit; anything else as
                    // the tree reads it (Foundation's parser), so both paths agree.
                    // An escaped key id is the tree's to read.
                    guard !member.raw.contains(UInt8(ascii: "\\")) else { return nil }
                    if let body = JSONObjectBytes.plainStringBody(member.raw) {
                        keyID = body.withUnsafeBytes { UUID(canonicalText: $0) }
                            ?? UUID(uuidString: String(decoding: body, as: UTF8.self))
                    } else {
                        keyID = nil
                    }
                } else if name.elementsEqual("fields".utf8) {
                    let inner = member.raw.drop(while: { $0 == 0x20 })
                    guard inner.first == UInt8(ascii: "["), inner.last == UInt8(ascii: "]") else { return nil }
                    let body = inner.dropFirst().dropLast()
                    if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
                        items = []
                    } else {
                        var list: [ArraySlice<UInt8>] = []
                        for item in body.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
                            let trimmed = item.drop(while: { $0 == 0x20 })
                            let end = trimmed.lastIndex(where: { $0 != 0x20 }).map { $0 + 1 } ?? trimmed.startIndex
                            let quoted = trimmed[..<end]
                            guard let text = JSONObjectBytes.plainStringBody(quoted), !text.contains(UInt8(ascii: "\"")) else { return nil }
                            list.append(text)
                        }
                        items = list
                    }
                }
            }
            guard let box, let items else { return nil }
            self.box = box
            self.fieldBytes = items
            self.keyID = keyID
        }

        /// The box's bytes: Base64 decoded from its text (Foundation's decoder where the strict
        /// one declines); empty when it is no Base64 at all (opening then fails as it should).
        func boxBytes() -> [UInt8] {
            Base64.decode(box) ?? Data(base64Encoded: Data(box)).map { [UInt8]($0) } ?? []
        }
    }
}
