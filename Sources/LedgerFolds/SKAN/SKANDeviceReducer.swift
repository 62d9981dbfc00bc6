import Foundation
import LedgerDomain
import LedgerProviders

/// Per-device SKAdNetwork 4 state, as the snippet of Singular's SKAdNetwork 4 implementation guide keeps it, folded from the log.
///
/// - `SKANRegistered` registers (fine value 0, first and last call set; once).
/// - `RevenueRecorded` adds to the totals by currency, IAP and ad monetization apart, overall and
///   in the window of its `occurred_at`, *before* any later conversion update ("revenue tracking
///   must precede conversion value updates"). A store transaction id counted once is never
///   counted again ("In case of retrying an event, avoid calling this method"), whatever the
///   event id of the retry.
/// - Singular's answer carrying a `conversion_value` (whatever its `status`, as the snippet reads
///   it) is applied as the snippet applies it (`valuesHasBeenUpdated:`): fine and coarse in p0,
///   coarse only in p1/p2, lock recorded.
/// - `SKANConversionValueUpdated` (the app set a value itself) is applied the same way; when it
///   only confirms the Singular answer just applied, it is recorded as a confirmation and not
///   applied twice.
/// - Windows from the first call: p0 [0, 48 h), p1 [48 h, 7 d), p2 [7 d, 35 d), by the snippet's
///   strict `<`. After 35 days nothing changes; a locked window ignores later updates (Apple
///   does); such updates are recorded as ignored, with the reason.
///
/// Of a revenue event's personal fields it reads only `transaction_id` (hashed, for the duplicate
/// check), never the device's identifiers: the projection asks the store to open only that one.
public struct SKANDeviceReducer: DeviceStateReducer {
    /// The state of one device.
    public struct State: Codable, Sendable, Equatable {
        /// The snippet's state, exactly what the conversion-value request carries.
        public var skan = SKANDeviceState()
        /// SHA-256 digests of the store transaction ids already counted (the ids are personal).
        public var countedTransactions: [String: Int64] = [:]
        /// Revenue events not counted, by reason (`duplicate_transaction`, `ignored_zero_amount`, …).
        public var revenueNotCounted: [String: Int] = [:]
        /// Conversion updates applied.
        public var updatesApplied = 0
        /// Conversion updates not applied, by reason (`ignored_window_locked`, `not_registered`, …).
        public var updatesIgnored: [String: Int] = [:]
        /// Singular's latest answer: the next conversion value for the app.
        public var lastSingularAnswer: SingularAnswer?
        /// Singular's error answers, by `reason`.
        public var singularErrors: [String: Int] = [:]

        /// A device no event has touched.
        public init() {}
    }

    /// What Singular last answered (`status: ok`).
    public struct SingularAnswer: Codable, Sendable, Equatable {
        /// `conversion_value`.
        public var conversionValue: Int?
        /// `skan_updated_coarse_value` (0–2).
        public var coarseValue: Int?
        /// `skan_updated_lock_window_value`.
        public var lockWindow: Bool
        /// `postback_sequence_index`.
        public var postbackSequenceIndex: Int?
        /// When the answer was recorded.
        public var answeredAt: Date
        /// Whether the app later reported setting exactly these values.
        public var confirmedByDevice = false
    }

    /// The reducer.
    public init() {}

    public let name = "skan_devices"
    /// 2: an answer with a `conversion_value` and a `status` other than `ok` is applied; a
    /// coarse-only update in p0 keeps the previous fine value. 3: an erasure drops the digests of
    /// the device's store transaction ids (``State/countedTransactions``).
    public let version = 3
    public var deviceEventTypes: [String] {
        [SKANRegistered.eventType, SKANConversionValueUpdated.eventType, RevenueRecorded.eventType, ErasureCompleted.eventType]
    }
    public var followedProviders: Set<SendProvider> { [.singular] }

    public func initialState() -> State { State() }

    /// Written directly (``State/jsonText()``); through `encoder` only where that declines.
    public func jsonText(of state: State, encoder: JSONEncoder) throws -> String {
        try state.jsonText() ?? String(decoding: try encoder.encode(state), as: UTF8.self)
    }

    public func apply(_ event: DeviceEvent, to state: inout State) throws {
        switch event.type {
        case SKANRegistered.eventType:
            state.skan.register(at: event.occurredAt)
        case ErasureCompleted.eventType:
            // A store transaction id is personal and has few enough values to be guessed from its
            // SHA-256: nothing derived from it outlives the device's erasure. (A purchase repeated
            // after the erasure cannot be told from a new one; the revenue was counted already.)
            state.countedTransactions.removeAll()
        case RevenueRecorded.eventType:
            // Only the three members SKAN reads are decoded; the device context is stepped over.
            let payload = PayloadMembers(event.record.data)
            let fields = try payload.flatMap(Self.quickRevenue)
                ?? payload.map { try event.decoder.decode(RevenueFields.self, from: $0.object(keeping: RevenueFields.memberNames)) }
                ?? event.decode(RevenueFields.self)
            try applyRevenue(fields, at: event, to: &state)
        case SKANConversionValueUpdated.eventType:
            let update = try Self.quickUpdate(event.record.data) ?? event.decode(SKANConversionValueUpdated.self)
            let coarse = update.coarseValue.map(Self.coarseNumber)
            if let answer = state.lastSingularAnswer, !answer.confirmedByDevice, answer.lockWindow == update.lockWindow,
                answer.coarseValue == coarse, update.fineValue == nil || update.fineValue == answer.conversionValue {
                state.lastSingularAnswer?.confirmedByDevice = true
                return
            }
            // Without a fine value the update keeps the current one; in p0 it is then no new fine
            // value, so the previous one stays what it was ("previous values kept as prev").
            let previousFine = state.skan.previousFineValue
            applyUpdate(fine: update.fineValue ?? state.skan.conversionValue ?? 0, coarse: coarse,
                        lock: update.lockWindow, at: event.occurredAt, to: &state)
            if update.fineValue == nil { state.skan.previousFineValue = previousFine }
        case ResponseReceived.eventType where event.send?.kind == .conversionValue:
            let response = try event.decode(ResponseReceived.self)
            guard (200...299).contains(response.status), let body = response.body?.bytes else { return }
            guard let answer = try? SingularConversionValueResponse.parse(body) else {
                state.singularErrors["unparseable_answer", default: 0] += 1
                return
            }
            // The snippet's reading, as the worker's classifier judges the answer: a
            // `conversion_value` is applied whatever the `status`; without one, only `ok` is not
            // an error.
            if case .rejected = answer.outcome {
                state.singularErrors[answer.reason ?? answer.status ?? "unknown", default: 0] += 1
                return
            }
            state.lastSingularAnswer = SingularAnswer(
                conversionValue: answer.conversionValue, coarseValue: answer.coarseValue?.rawValue,
                lockWindow: answer.lockWindow ?? false, postbackSequenceIndex: answer.postbackSequenceIndex,
                answeredAt: event.occurredAt)
            if let value = answer.conversionValue {
                applyUpdate(fine: value, coarse: answer.coarseValue?.rawValue, lock: answer.lockWindow ?? false,
                            at: event.occurredAt, to: &state)
            }
        default:
            break
        }
    }

    /// The three fields of `RevenueRecorded` SKAN needs: decoding only these skips the device
    /// context, which is most of the payload.
    struct RevenueFields: Decodable {
        var revenue: Money
        var kind: RevenueKind
        var transactionID: String?
        enum CodingKeys: String, CodingKey, CaseIterable {
            case revenue, kind
            case transactionID = "transaction_id"
        }
        static let memberNames = Set(CodingKeys.allCases.map(\.rawValue))
    }

    /// ``RevenueFields`` read from the payload's bytes (a third of a SKAN history's events, and
    /// `JSONDecoder` was most of their fold): nil unless every member is exactly what the decoder
    /// would read without fuss — `revenue` an object with plain-string `amount` and `currency`
    /// (no repeated key), `kind` a known plain string, `transaction_id` absent, `null` or a plain
    /// string — and the amount and currency pass ``Money``'s own checks. The decoder decides
    /// (and words the error for) everything else.
    static func quickRevenue(_ payload: PayloadMembers) -> RevenueFields? {
        guard let revenueRaw = payload.raw("revenue"), let money = JSONObjectBytes.members(of: revenueRaw),
              let kindRaw = payload.raw("kind"),
              let kind = JSONObjectBytes.plainString(kindRaw).flatMap(RevenueKind.init(rawValue:))
        else { return nil }
        var amount: String?
        var currency: String?
        for member in money {
            if member.keyBytes.elementsEqual("amount".utf8) {
                guard amount == nil else { return nil }
                amount = JSONObjectBytes.plainString(member.raw)
                if amount == nil { return nil }
            } else if member.keyBytes.elementsEqual("currency".utf8) {
                guard currency == nil else { return nil }
                currency = JSONObjectBytes.plainString(member.raw)
                if currency == nil { return nil }
            }
        }
        guard let amount, let currency, let code = try? CurrencyCode(currency),
              let revenue = try? Money(amount: amount, currency: code)
        else { return nil }
        var transactionID: String?
        if let raw = payload.raw("transaction_id"), !PayloadMembers.isNull(raw) {
            guard let text = JSONObjectBytes.plainString(raw) else { return nil }
            transactionID = text
        }
        return RevenueFields(revenue: revenue, kind: kind, transactionID: transactionID)
    }

    /// `SKANConversionValueUpdated` read from its bytes (most of a SKAN history's events): nil
    /// unless they hold exactly what `JSONDecoder` would read without fuss (plain integer, a
    /// known coarse value or null, a boolean lock), so the decoder decides everything else.
    static func quickUpdate(_ data: Data) -> SKANConversionValueUpdated? {
        guard let payload = PayloadMembers(data), let lockRaw = payload.raw("lock_window"),
            let lock = PayloadMembers.bool(lockRaw) else { return nil }
        var fine: Int?
        if let raw = payload.raw("fine_value"), !PayloadMembers.isNull(raw) {
            guard let value = PayloadMembers.integer(raw) else { return nil }
            fine = value
        }
        var coarse: LedgerDomain.SKANCoarseValue?
        if let raw = payload.raw("coarse_value"), !PayloadMembers.isNull(raw) {
            guard let value = JSONObjectBytes.plainString(raw).flatMap(LedgerDomain.SKANCoarseValue.init(rawValue:)) else { return nil }
            coarse = value
        }
        return SKANConversionValueUpdated(fineValue: fine, coarseValue: coarse, lockWindow: lock)
    }

    func applyRevenue(_ revenue: RevenueFields, at event: DeviceEvent, to state: inout State) throws {
        if let transaction = revenue.transactionID {
            let digest = Digest.sha256Hex(transaction)
            guard state.countedTransactions[digest] == nil else {
                state.revenueNotCounted["duplicate_transaction", default: 0] += 1
                return
            }
            state.countedTransactions[digest] = event.record.position
        }
        do {
            let outcome = try state.skan.addRevenue(revenue.revenue.amount, currency: revenue.revenue.currency.rawValue,
                                                    isAdMonetization: revenue.kind == .adMonetization, at: event.occurredAt)
            switch outcome {
            case .ignoredZeroAmount, .ignoredMissingCurrency: state.revenueNotCounted[outcome.rawValue, default: 0] += 1
            default: break
            }
        } catch {
            state.revenueNotCounted[error.rule, default: 0] += 1
        }
    }

    func applyUpdate(fine: Int, coarse: Int?, lock: Bool, at time: Date, to state: inout State) {
        do {
            let outcome = try state.skan.applyConversionUpdate(conversionValue: fine, coarseValue: coarse, lockWindow: lock,
                                                               at: time)
            switch outcome {
            case .appliedP0, .appliedP1, .appliedP2: state.updatesApplied += 1
            default: state.updatesIgnored[outcome.rawValue, default: 0] += 1
            }
        } catch {
            // "Illegal values" and updates before registration: refused, and counted.
            state.updatesIgnored[error.rule, default: 0] += 1
        }
    }

    static func coarseNumber(_ value: LedgerDomain.SKANCoarseValue) -> Int {
        switch value {
        case .low: 0
        case .medium: 1
        case .high: 2
        }
    }
}
