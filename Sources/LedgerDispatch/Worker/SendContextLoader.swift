import Foundation
import LedgerDomain
import LedgerFolds
import LedgerStore

/// Gathers a ``SendContext`` from the log just before a try: the cause event, and what the
/// provider needs that the log knows *now* — computed by replaying the device's history through
/// the projections' reducers, not read from the projections' tables, so a lagging projection can
/// never make a send carry stale identity. (The SKAN state Singular gets is the one as of the
/// cause: ``skanState(of:asOf:)``.)
struct SendContextLoader: Sendable {
    let store: EventStore

    /// The context of `claim`'s try; `cause` is its cause event, read beforehand with the rest of
    /// its claim's (nil: not in the log).
    func load(_ claim: SendQueue.Claim, cause: RecordedEvent?, now: Date, jitter: Double) async throws -> SendContext {
        let request = claim.request
        guard let cause else {
            throw DispatchError.unbuildable(rule: "cause_missing", detail: "the cause event \(request.causeEventID) is not in the log")
        }
        let device = request.deviceStreamID.rawValue
        var branch = BranchIdentityReducer.State()
        var skan = SKANDeviceReducer.State()
        var conversion: (send: SendRequested, cause: RecordedEvent)?
        var deviceUserAgent: String?
        switch request.provider {
        case .branch:
            branch = try await state(of: device, by: BranchIdentityReducer())
            deviceUserAgent = try await self.deviceUserAgent(of: device, asOf: cause)
        case .singular:
            skan = try await skanState(of: device, asOf: cause)
        case .google where request.kind == .crossNetwork:
            let obligations = try await state(of: device, by: GoogleObligationReducer())
            guard let adEventID = request.parameters?["ad_event_id"], let obligation = obligations.obligations[adEventID] else {
                throw DispatchError.unbuildable(rule: "no_obligation", detail: "no Google answer for this device carried that ad_event_id")
            }
            let conversionStream = try await store.readStream(obligation.conversionSendStreamID, limit: 1)
            guard let first = conversionStream.first, first.type == SendRequested.eventType else {
                throw DispatchError.unbuildable(rule: "no_obligation", detail: "the conversion send of the obligation is not in the log")
            }
            let conversionRequest = try LedgerJSON.makeDecoder().decode(SendRequested.self, from: first.data)
            guard let conversionCause = try await store.event(id: conversionRequest.causeEventID) else {
                throw DispatchError.unbuildable(rule: "cause_missing", detail: "the conversion's cause event is not in the log")
            }
            conversion = (conversionRequest, conversionCause)
        default:
            break
        }
        var context = SendContext(send: request, sendStreamID: claim.streamID, attempt: claim.attempt,
                                  call: claim.attempt - claim.uncalled, cause: cause,
                                  branchIdentity: branch, skan: skan, conversion: conversion, now: now, jitter: jitter)
        context.deviceUserAgent = deviceUserAgent
        // In-app events, revenue and deep links may lack the network facts (IP, user agent) and
        // the identifiers a request needs: the device the launches before the cause described
        // stands in, as docs/events.md says. A
        // cross-network report is the conversion's request again ("identical to the original
        // conversion tracking request", Google App Conversion Tracking API): the launch before the
        // conversion's cause stands in, not the one before the decision the report is caused by.
        let builtFrom = conversion?.cause ?? cause
        if ![FirstOpen.eventType, SessionStarted.eventType].contains(builtFrom.type) {
            context.lastSessionDevice = try await lastLaunchDevice(device, before: builtFrom)
        }
        return context
    }

    /// The device's state by `reducer`, replayed from its history in the log as it is now.
    func state<Reducer: DeviceStateReducer>(of device: String, by reducer: Reducer) async throws -> Reducer.State {
        let events = try await store.readHistory(of: .deviceHistory(device), types: reducer.eventTypes)
        return try reducer.replay(events.map(LoggedEvent.init), device: device)
    }

    /// The device's SKAN state as of `cause`, for a Singular call: the Singular SKAdNetwork 4
    /// implementation guide's snippet sends each event with the state the device had when the
    /// event happened, so a worker that is behind must not add what happened after it (a later
    /// purchase's revenue, a value the app set later). Folded from the device's history up to and
    /// including the cause, with two exceptions:
    /// - the answers to the device's earlier Singular calls (their send streams), whenever they
    ///   were recorded: the device's calls go one at a time in its lane, oldest cause first, so
    ///   every answer in the log belongs to a call before this one, and the snippet applies each
    ///   answer before its next call;
    /// - `SKANRegistered`: the snippet registers on the first launch before any call; the app
    ///   records it as a fact of its own that may reach the ledger after the first open.
    func skanState(of device: String, asOf cause: RecordedEvent) async throws -> SKANDeviceReducer.State {
        let reducer = SKANDeviceReducer()
        let events = try await store.readHistory(of: .deviceHistory(device), types: reducer.eventTypes)
        let known = events.filter { event in
            event.position <= cause.position || event.type == SKANRegistered.eventType
                || event.streamID.utf8.starts(with: "send-".utf8)
        }
        return try reducer.replay(known.map(LoggedEvent.init), device: device)
    }

    /// The device's own user agent text as of `cause`: the latest `DeviceUserAgentRecorded` of its
    /// history up to and including the cause, in the log's order (one recorded later belongs to
    /// later opens). `nil` without one, or when it was erased.
    func deviceUserAgent(of device: String, asOf cause: RecordedEvent) async throws -> String? {
        let recorded = try await store.readHistory(of: .deviceHistory(device), types: [DeviceUserAgentRecorded.eventType],
                                                   asOf: .position(cause.position))
        guard let latest = recorded.last else { return nil }
        return try LedgerJSON.makeDecoder().decode(DeviceUserAgentRecorded.self, from: latest.data).userAgent
    }

    /// The device as its launches (`FirstOpen`, `SessionStarted`) up to `cause` describe it: the
    /// latest launch's context, with the identifiers it lacks taken from earlier launches
    /// (``LedgerDomain/DeviceContext/completeIdentifiers(from:)``). `nil` without a launch.
    func lastLaunchDevice(_ device: String, before cause: RecordedEvent) async throws -> DeviceContext? {
        let launches = try await store.readHistory(of: .deviceHistory(device), types: [FirstOpen.eventType, SessionStarted.eventType],
                                                         asOf: .position(cause.position))
        struct Launch: Decodable { var device: DeviceContext }
        let decoder = LedgerJSON.makeDecoder()
        guard let last = launches.last else { return nil }
        var known = try decoder.decode(Launch.self, from: last.data).device
        // Newest first, and only while something is missing: most devices' latest launch has them all.
        for earlier in launches.dropLast().reversed() where known.lacksIdentifiers {
            known.completeIdentifiers(from: try decoder.decode(Launch.self, from: earlier.data).device)
        }
        return known
    }
}

extension LoggedEvent {
    /// What a fold reads of `event`.
    init(_ event: RecordedEvent) {
        self.init(position: event.position, streamID: event.streamID, id: event.id, type: event.type, data: event.data,
                  occurredAt: event.occurredAt, recordedAt: event.recordedAt)
    }
}
