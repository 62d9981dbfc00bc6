import Foundation
import LedgerDomain
import LedgerProviders

/// The touches each provider's answer offers the decision rule. Pure: bodies in, candidates out.
/// An answer that does not parse offers nothing (the send's own record keeps it).
enum TouchExtraction {
    /// Google: every ad event of an affirmative conversion answer (`attributed: true`), as a click
    /// at its `timestamp` ("use it for last-click"; `interaction_type` is always null, so every ad
    /// event counts as a click). An answer with `attributed: false` offers nothing, whatever ad
    /// events it lists (``GoogleConversionResponse/claimedAdEvents``).
    static func google(_ body: Data, position: Int64) -> [TouchCandidate] {
        guard let answer = try? GoogleConversionResponse.parse(body) else { return [] }
        return answer.claimedAdEvents.map { event in
            TouchCandidate(
                touch: AttributionTouch(
                    source: .google, interaction: .click,
                    time: Date(timeIntervalSince1970: Double(event.timestamp.microsecondsSince1970) / 1_000_000),
                    campaignID: String(event.campaignID), campaignName: event.campaignName,
                    adGroupID: event.adGroupID.map { String($0) }, creativeID: event.creativeID.map { String($0) },
                    adEventID: event.adEventID),
                position: position)
        }
    }

    /// Apple AdServices: an `attribution=true` record, a view when `claimType` is `Impression`, a
    /// tap otherwise, at `clickDate` / `impressionDate` (detailed payload). A standard payload has
    /// no date: Apple's `attribution=true` certifies a tap within 30 days (a view within 24 h)
    /// before the download without saying when, so the touch is `undated` (the rule places it at
    /// its window's start: a dated click in the window outranks it).
    static func appleAdServices(_ body: Data, position: Int64) -> [TouchCandidate] {
        guard let record = try? AdServicesAttribution.parse(body), record.attribution else { return [] }
        let view = record.claimType == .impression
        let dated = (view ? record.impressionDate : record.clickDate) ?? record.clickDate ?? record.impressionDate
        let time = dated ?? Date(timeIntervalSince1970: 0)
        return [
            TouchCandidate(
                touch: AttributionTouch(
                    source: .appleAdServices, interaction: view ? .view : .click, time: time,
                    campaignID: record.campaignId.map { String($0) }, adGroupID: record.adGroupId.map { String($0) },
                    keywordID: record.keywordId.map { String($0) }, creativeID: record.adId.map { String($0) }),
                isPreOrder: record.conversionType == .preOrder, position: position, undated: dated == nil)
        ]
    }

    /// Branch: a click on a Branch link (`+clicked_branch_link` true) at `+click_timestamp`.
    static func branch(_ body: Data, position: Int64) -> [TouchCandidate] {
        guard let answer = try? BranchOpenResponse.parse(body), let data = answer.data, data.clickedBranchLink == true,
            let time = data.clickDate
        else { return [] }
        return [
            TouchCandidate(
                touch: AttributionTouch(source: .branch, interaction: .click, time: time, campaignName: data.campaign),
                position: position)
        ]
    }

    /// Legacy iAd: `iad-attribution` true with an `iad-click-date` (an `iad-attribution` false, the
    /// only answer since February 2023, offers nothing and so never outweighs an AdServices true).
    static func iAd(_ details: JSONValue?, position: Int64) -> [TouchCandidate] {
        guard let details, let data = try? LedgerJSON.makeEncoder().encode(details),
            let parsed = try? IAdAttributionDetails.parse(data), parsed.attribution == true, let time = parsed.clickDate
        else { return [] }
        return [
            TouchCandidate(
                touch: AttributionTouch(
                    source: .appleIAd, interaction: .click, time: time, campaignID: parsed.campaignID,
                    campaignName: parsed.campaignName, adGroupID: parsed.adGroupID, keywordID: parsed.keywordID,
                    creativeID: parsed.creativeSetID),
                position: position)
        ]
    }
}
