import Foundation

/// Who gets credit for an install (or a re-attributed session), and why: every candidate the
/// providers offered, what became of each, and the exact inputs the rule read. Never edited: a
/// later decision about the same trigger supersedes it.
///
/// Stream: `decision-<app>/<device>`. Holds no personal data (campaign-level ids only).
public struct AttributionDecided: LedgerEvent {
    /// The stored type name (see ``LedgerEvent/eventType``).
    public static let eventType = "AttributionDecided"
    /// The version of this JSON shape.
    public static let schemaVersion = 1
    /// What the event is about.
    public static let category = EventCategory.decision
    /// The category of the streams it is appended to.
    public static let streamCategory = StreamCategory.decision
    /// The fields the privacy layer encrypts per device (see ``LedgerEvent/personalFields``).
    public static let personalFields: [String] = []

    /// This decision's id (what a later decision's `supersedes` names, and what Google
    /// cross-network sends are caused by).
    public var decisionID: UUID
    /// The device decided about (`device-<app>/<device>`).
    public var deviceStreamID: StreamID
    /// The event that needed a decision: a `FirstOpen` (install) or a `SessionStarted`
    /// (re-attribution).
    public var triggerEventID: UUID
    /// Whether the trigger was an install or a re-attribution session.
    public var triggerKind: AttributionTrigger
    /// The version of the decision rule that decided (`last-click-v1`), so a changed rule can be
    /// told apart from changed inputs.
    public var ruleVersion: String
    /// The winning touch, or `nil` for an organic install.
    public var winner: AttributionTouch?
    /// Every candidate considered, each with its outcome (exactly one `won` when there is a winner).
    public var candidates: [AttributionCandidate]
    /// True when no paid touch won.
    public var organic: Bool
    /// The global positions of the events the rule read (provider answers, device events), in
    /// ascending order: replaying them reproduces the decision.
    public var inputPositions: [Int64]
    /// The decision this one replaces, if any.
    public var supersedes: UUID?

    /// Creates the event.
    public init(
        decisionID: UUID, deviceStreamID: StreamID, triggerEventID: UUID, triggerKind: AttributionTrigger, ruleVersion: String,
        winner: AttributionTouch?, candidates: [AttributionCandidate], organic: Bool, inputPositions: [Int64],
        supersedes: UUID? = nil
    ) {
        self.decisionID = decisionID
        self.deviceStreamID = deviceStreamID
        self.triggerEventID = triggerEventID
        self.triggerKind = triggerKind
        self.ruleVersion = ruleVersion
        self.winner = winner
        self.candidates = candidates
        self.organic = organic
        self.inputPositions = inputPositions
        self.supersedes = supersedes
    }

    enum CodingKeys: String, CodingKey {
        case decisionID = "decision_id"
        case deviceStreamID = "device_stream_id"
        case triggerEventID = "trigger_event_id"
        case triggerKind = "trigger_kind"
        case ruleVersion = "rule_version"
        case winner, candidates, organic
        case inputPositions = "input_positions"
        case supersedes
    }

    /// A device stream; a rule version; `organic` exactly when there is no winner; exactly one
    /// `won` candidate, equal to the winner, when there is one (none otherwise); positions
    /// positive, ascending, at least one; a decision never supersedes itself.
    public func validate() throws(RuleViolation) {
        try Check.streamCategory(deviceStreamID, .device, "device_stream_id")
        try Check.text(ruleVersion, "rule_version", max: 64)
        try winner?.validate(at: "winner")
        for (index, candidate) in candidates.enumerated() {
            try candidate.touch.validate(at: FieldPath.index("candidates", index))
        }
        guard organic == (winner == nil) else {
            throw RuleViolation(field: "organic", rule: "organic_iff_no_winner", message: "'organic' is true exactly when there is no winner.")
        }
        let won = candidates.enumerated().filter { $0.element.outcome == .won }
        if let winner {
            guard won.count == 1, let only = won.first, only.element.touch == winner else {
                throw RuleViolation(
                    field: "candidates", rule: "winner_is_won_candidate",
                    message: "Exactly one candidate is 'won', and it is the winner.")
            }
        } else if let first = won.first {
            throw RuleViolation(
                field: FieldPath.join(FieldPath.index("candidates", first.offset), "outcome"), rule: "no_won_candidate_when_organic",
                message: "An organic decision has no 'won' candidate.")
        }
        guard !inputPositions.isEmpty else {
            throw RuleViolation(field: "input_positions", rule: "non_empty", message: "A decision reads at least one event.")
        }
        for (index, position) in inputPositions.enumerated() {
            let field = FieldPath.index("input_positions", index)
            try Check.atLeast(position, 1, field)
            if index > 0, position <= inputPositions[index - 1] {
                throw RuleViolation(field: field, rule: "ascending", message: "Positions are listed in strictly ascending order.")
            }
        }
        if supersedes == decisionID {
            throw RuleViolation(field: "supersedes", rule: "not_self", message: "A decision cannot supersede itself.")
        }
    }
}

/// What a decision was made for.
public enum AttributionTrigger: String, LedgerEnum {
    /// A first open.
    case install
    /// A later session that may re-attribute (Google `session_start`).
    case reattribution
}

/// Where a touch was reported from.
public enum AttributionSource: String, LedgerEnum {
    /// A Google ad event (from the conversion answer's `ad_events`).
    case google
    /// Apple AdServices' attribution record.
    case appleAdServices = "apple_adservices"
    /// Branch's answer (a clicked Branch link).
    case branch
    /// Apple's legacy iAd details.
    case appleIAd = "apple_iad"
}

/// How the user met the ad.
public enum AttributionInteraction: String, LedgerEnum {
    /// A tap or click (beats any view).
    case click
    /// An impression.
    case view
}

/// One ad interaction that could get credit: the source, when, and the campaign-level ids the
/// source reported. Used for the winner and, with an outcome, for each candidate.
public struct AttributionTouch: Codable, Sendable, Hashable {
    /// The reporting source.
    public var source: AttributionSource
    /// Click or view.
    public var interaction: AttributionInteraction
    /// When the click or view happened (Google's ad event `timestamp`, Apple's `clickDate` /
    /// `impressionDate`, Branch's `+click_timestamp`).
    public var time: Date
    /// The campaign id, as text (Apple's are numbers, Google's strings).
    public var campaignID: String?
    /// The campaign name, when reported.
    public var campaignName: String?
    /// The ad group id.
    public var adGroupID: String?
    /// The keyword id (Apple; absent for search match).
    public var keywordID: String?
    /// The creative or ad id.
    public var creativeID: String?
    /// Google's `ad_event_id`: the cross-network report for this ad event names it.
    public var adEventID: String?

    /// Creates a touch.
    public init(
        source: AttributionSource, interaction: AttributionInteraction, time: Date, campaignID: String? = nil,
        campaignName: String? = nil, adGroupID: String? = nil, keywordID: String? = nil, creativeID: String? = nil,
        adEventID: String? = nil
    ) {
        self.source = source
        self.interaction = interaction
        self.time = time
        self.campaignID = campaignID
        self.campaignName = campaignName
        self.adGroupID = adGroupID
        self.keywordID = keywordID
        self.creativeID = creativeID
        self.adEventID = adEventID
    }

    enum CodingKeys: String, CodingKey {
        case source, interaction, time
        case campaignID = "campaign_id"
        case campaignName = "campaign_name"
        case adGroupID = "ad_group_id"
        case keywordID = "keyword_id"
        case creativeID = "creative_id"
        case adEventID = "ad_event_id"
    }

    func validate(at path: String) throws(RuleViolation) {
        func field(_ key: CodingKeys) -> String { FieldPath.join(path, key.stringValue) }
        try Check.text(campaignID, field(.campaignID))
        try Check.text(campaignName, field(.campaignName))
        try Check.text(adGroupID, field(.adGroupID))
        try Check.text(keywordID, field(.keywordID))
        try Check.text(creativeID, field(.creativeID))
        try Check.text(adEventID, field(.adEventID))
        if adEventID != nil, source != .google {
            throw RuleViolation(field: field(.adEventID), rule: "google_only", message: "Only Google touches carry an ad_event_id.")
        }
    }
}

/// A touch the decision considered, and what became of it. JSON: the touch's fields plus `outcome`.
public struct AttributionCandidate: Codable, Sendable, Hashable {
    /// The touch.
    public var touch: AttributionTouch
    /// Why it won or lost.
    public var outcome: CandidateOutcome

    /// Creates a candidate.
    public init(touch: AttributionTouch, outcome: CandidateOutcome) {
        self.touch = touch
        self.outcome = outcome
    }

    private enum CodingKeys: String, CodingKey {
        case outcome
    }

    /// Decodes the JSON shape described above; invalid values throw `dataCorrupted` carrying a ``RuleViolation``.
    public init(from decoder: any Decoder) throws {
        touch = try AttributionTouch(from: decoder)
        outcome = try decoder.container(keyedBy: CodingKeys.self).decode(CandidateOutcome.self, forKey: .outcome)
    }

    /// Encodes the JSON shape described above.
    public func encode(to encoder: any Encoder) throws {
        try touch.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(outcome, forKey: .outcome)
    }
}

/// What became of a candidate.
public enum CandidateOutcome: String, LedgerEnum {
    /// It got the credit.
    case won
    /// It happened outside its lookback window (Apple: 30 days for a tap, 24 h for a view;
    /// Google: 30 days for installs).
    case outsideWindow = "outside_window"
    /// A view, beaten by a click inside its window (clicks beat views).
    case viewBeatenByClick = "view_beaten_by_click"
    /// A click, beaten by a later click (last click wins).
    case earlierClick = "earlier_click"
    /// As late as the winner, lost the tie-break.
    case tieLost = "tie_lost"
}
