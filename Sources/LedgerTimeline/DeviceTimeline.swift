import Foundation
import LedgerDecisions
import LedgerDomain
import LedgerFolds
import LedgerProjections
import LedgerProviders
import LedgerStore

/// What a device's timeline page draws: the explanation `ledger explain` prints (the same
/// decisions, candidates, reasons, sends and late answers: nothing is decided again here), the
/// device's SKAdNetwork 4 state, and the lookback windows of the device's app, which turn each
/// candidate's time into the band of time it could have won in.
public struct DeviceTimeline: Sendable {
    /// The device's attribution story, as ``AttributionExplanation/load(device:asOf:store:)`` reads it.
    public var explanation: AttributionExplanation
    /// The device's SKAdNetwork 4 conversion state (unregistered when the app never called SKAdNetwork).
    public var skan: SKANDeviceState
    /// The lookback windows the app's decisions use (the app's attribution settings).
    public var windows: AttributionWindows

    /// A timeline from what was already read.
    public init(explanation: AttributionExplanation, skan: SKANDeviceState, windows: AttributionWindows) {
        self.explanation = explanation
        self.skan = skan
        self.windows = windows
    }

    /// Reads a device's timeline from the log, as of a position or time when given.
    /// - Parameters:
    ///   - device: the device stream, `device-<app>/<device>`.
    ///   - asOf: as the ledger knew it then (everything when nil).
    ///   - store: the event store.
    ///   - windows: the app's lookback windows (its attribution settings).
    /// - Throws: `PostgresError`, or a decoding error for a stored event the folds cannot read.
    public static func load(device: String, asOf: AsOf? = nil, store: EventStore, windows: AttributionWindows) async throws
        -> DeviceTimeline
    {
        let explanation = try await AttributionExplanation.load(device: device, asOf: asOf, store: store)
        let skan = try await SKANDeviceProjection(SKANDeviceReducer()).state(of: device, asOf: asOf, store: store).skan
        return DeviceTimeline(explanation: explanation, skan: skan, windows: windows)
    }

    /// The page's Content-Security-Policy, also in its meta tag: nothing external (no script, font,
    /// image or request), only its own inline style. A server sends it as a header too.
    public static let contentSecurityPolicy = TimelinePage.contentSecurityPolicy

    /// The page: one self-contained HTML document with the timeline drawn in inline SVG.
    public func html() -> String { TimelinePage(self).render() }
}
