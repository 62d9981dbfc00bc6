import Foundation
import LedgerDomain
import LedgerProviders

extension SKANDeviceReducer.State {
    /// The state's JSON, written directly: the members `JSONEncoder` (the ledger's, see
    /// ``LedgerJSON/makeEncoder()``) writes, with the same values, in their order but unsorted
    /// (the column is `jsonb`, which keeps keys in its own order anyway).
    ///
    /// A rebuild stores every device's state at its end; through `JSONEncoder` that was about
    /// 120 µs a device, mostly its generic walk over the dictionaries (the counted transactions'
    /// digests). Nil when a value needs the encoder's own judgement (a `Decimal` that is not a
    /// number, a date outside the years 0001–9999): the caller then uses the encoder.
    func jsonText() -> String? {
        var out = JSONText()
        out.open()
        out.key("skan")
        guard out.skan(skan) else { return nil }
        out.key("countedTransactions")
        out.object(countedTransactions) { $0.integer($1) }
        out.key("revenueNotCounted")
        out.object(revenueNotCounted) { $0.integer($1) }
        out.key("updatesApplied")
        out.integer(updatesApplied)
        out.key("updatesIgnored")
        out.object(updatesIgnored) { $0.integer($1) }
        if let answer = lastSingularAnswer {
            out.key("lastSingularAnswer")
            out.open()
            out.optional("conversionValue", answer.conversionValue)
            out.optional("coarseValue", answer.coarseValue)
            out.key("lockWindow")
            out.bool(answer.lockWindow)
            out.optional("postbackSequenceIndex", answer.postbackSequenceIndex)
            guard let answeredAt = LedgerTimestamp.format(answer.answeredAt) else { return nil }
            out.key("answeredAt")
            out.string(answeredAt)
            out.key("confirmedByDevice")
            out.bool(answer.confirmedByDevice)
            out.close()
        }
        out.key("singularErrors")
        out.object(singularErrors) { $0.integer($1) }
        out.close()
        return String(decoding: out.bytes, as: UTF8.self)
    }
}

/// A JSON object's text, written member by member (commas placed as members come).
struct JSONText {
    private(set) var bytes: [UInt8] = []
    /// Whether the innermost open object has no member yet.
    private var empty = false

    init() { bytes.reserveCapacity(4096) }

    mutating func open() {
        bytes.append(UInt8(ascii: "{"))
        empty = true
    }

    mutating func close() {
        bytes.append(UInt8(ascii: "}"))
        empty = false
    }

    /// A member's key (and the comma before it, unless it is the first).
    mutating func key(_ name: String) {
        if !empty { bytes.append(UInt8(ascii: ",")) }
        empty = false
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func integer<Number: BinaryInteger>(_ value: Number) {
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func bool(_ value: Bool) {
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    /// A member written only when `value` is there (as `encodeIfPresent`).
    mutating func optional<Number: BinaryInteger>(_ name: String, _ value: Number?) {
        guard let value else { return }
        key(name)
        integer(value)
    }

    /// A JSON string: `"` and `\` escaped, control characters as `\uXXXX`, everything else as is.
    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0..<0x20:
                let hex = Digest.hexDigits
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// An object of `values` by key, each written by `write`.
    mutating func object<Value>(_ values: [String: Value], _ write: (inout JSONText, Value) -> Void) {
        open()
        for (name, value) in values {
            key(name)
            write(&self, value)
        }
        close()
    }

    /// A `Decimal` as `JSONEncoder` writes it (its `description`); false for NaN, which the
    /// encoder refuses.
    mutating func decimal(_ value: Decimal) -> Bool {
        guard !value.isNaN else { return false }
        bytes.append(contentsOf: value.description.utf8)
        return true
    }

    /// ``SKANDeviceState`` as its `encode(to:)` writes it: absent values and empty revenue
    /// objects left out, coarse values as their numbers.
    mutating func skan(_ state: SKANDeviceState) -> Bool {
        open()
        optional("skan_current_conversion_value", state.conversionValue)
        optional("prev_fine_value", state.previousFineValue)
        optional("p0_coarse", state.p0Coarse?.rawValue)
        optional("p1_coarse", state.p1Coarse?.rawValue)
        optional("p2_coarse", state.p2Coarse?.rawValue)
        optional("p0_prev_coarse_value", state.p0PreviousCoarse?.rawValue)
        optional("p1_prev_coarse_value", state.p1PreviousCoarse?.rawValue)
        optional("p2_prev_coarse_value", state.p2PreviousCoarse?.rawValue)
        optional("p0_window_lock", state.p0WindowLock)
        optional("p1_window_lock", state.p1WindowLock)
        optional("p2_window_lock", state.p2WindowLock)
        for (name, totals) in [
            ("skan_total_revenue_by_currency", state.totalRevenueByCurrency),
            ("skan_total_admon_revenue_by_currency", state.totalAdMonRevenueByCurrency),
            ("p0_total_iap_revenue", state.p0TotalIAPRevenue), ("p1_total_iap_revenue", state.p1TotalIAPRevenue),
            ("p2_total_iap_revenue", state.p2TotalIAPRevenue), ("p0_total_admon_revenue", state.p0TotalAdMonRevenue),
            ("p1_total_admon_revenue", state.p1TotalAdMonRevenue), ("p2_total_admon_revenue", state.p2TotalAdMonRevenue),
        ] where !totals.isEmpty {
            key(name)
            open()
            for (currency, amount) in totals {
                key(currency)
                guard decimal(amount) else { return false }
            }
            close()
        }
        optional("skan_first_call_to_skadnetwork_timestamp", state.firstCallTimestamp)
        optional("skan_last_call_to_skadnetwork_timestamp", state.lastCallTimestamp)
        close()
        return true
    }
}
