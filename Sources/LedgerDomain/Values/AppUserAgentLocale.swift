import Foundation

/// The locale of an app User-Agent, in the one form the Google App Conversion Tracking API
/// allows: "an IETF locale tag for the device, using two-letter language and country code
/// separated by an underscore (en_US)".
///
/// Devices report locales in more shapes than that (`en-US`, `zh_Hans_CN`, `en_US_POSIX`,
/// `de_DE@calendar=gregorian`, `es_419`, `en`). One rule decides, both when a fact is appended
/// (`UserAgentParts` refuses what it cannot write) and when the User-Agent is built (the builder
/// sends ``googleForm(_:)`` and accepts only that form), so that a fact accepted at append can
/// always be sent:
/// - ICU keywords after `@` are dropped; subtags are separated by `_` or `-`;
/// - the first subtag is the language: exactly two ASCII letters, written lowercase;
/// - a four-letter script subtag (`Hans`) is skipped; the next subtag must be the country:
///   exactly two ASCII letters, written uppercase; anything after it (a variant, `POSIX`) is dropped.
/// A locale without a two-letter language, or without a two-letter country (`en`; `es_419`,
/// whose `419` is a UN M.49 region, not a country) cannot be written in that form: it is refused
/// (rule ``rule``).
public enum AppUserAgentLocale {
    /// The rule's identifier in errors: `locale_ll_CC`.
    public static let rule = "locale_ll_CC"

    /// The sentence errors give.
    public static let message =
        "locale must name a two-letter language and a two-letter country, e.g. en_US, en-US or zh_Hans_CN; "
        + "a language alone or a region that is no country (419) cannot be sent (Google App Conversion Tracking API)."

    /// `locale` written as `ll_CC`, or `nil` when it names no two-letter language and country.
    public static func googleForm(_ locale: String) -> String? {
        let tag = locale.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let subtags = tag.split(omittingEmptySubsequences: false) { $0 == "_" || $0 == "-" }
        guard subtags.count >= 2, isLetters(subtags[0], count: 2) else { return nil }
        var index = 1
        if isLetters(subtags[index], count: 4) { index += 1 }
        guard index < subtags.count, isLetters(subtags[index], count: 2) else { return nil }
        return subtags[0].lowercased() + "_" + subtags[index].uppercased()
    }

    /// Whether `locale` is already in the form the User-Agent carries (`en_US`).
    public static func isGoogleForm(_ locale: String) -> Bool { googleForm(locale) == locale }

    private static func isLetters(_ text: Substring, count: Int) -> Bool {
        text.unicodeScalars.count == count
            && text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("A"..."Z").contains($0) }
    }
}
