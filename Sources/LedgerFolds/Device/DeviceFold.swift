import Foundation
import LedgerDomain

/// The one field of a decision a per-device projection routes by.
struct DecisionDevice: Decodable {
    var device_stream_id: String
}

/// A send's link to its device, from its `SendRequested`.
package struct SendLink: Sendable {
    /// The device the send is about.
    package var deviceStreamID: String
    /// The send's request.
    package var request: SendRequested

    /// A link.
    package init(deviceStreamID: String, request: SendRequested) {
        self.deviceStreamID = deviceStreamID
        self.request = request
    }
}

/// Folds events into per-device states in memory: the shared core of an incremental step, a
/// rebuild's bulk phase and an "as of" replay.
package struct DeviceFold<Reducer: DeviceStateReducer> {
    let reducer: Reducer
    /// States by device stream id.
    package private(set) var states: [String: Reducer.State] = [:]
    /// The last event applied to each device (position and recorded time).
    package private(set) var lastApplied: [String: (position: Int64, recordedAt: Date)] = [:]
    /// Known send links by send stream id.
    package var links: [String: SendLink] = [:]
    /// Links made by the folded events (to be stored).
    package var newLinks: [String: SendLink] = [:]
    /// The ledger's decoder, shared by every event folded.
    package let decoder = LedgerJSON.makeDecoder()
    /// The device folded last, and where its entries are in ``states`` and ``lastApplied``:
    /// consecutive events are mostly one device's (a stream is appended in batches), and hashing
    /// its id twice for every event was a visible part of a rebuild's fold. Forgotten when either
    /// dictionary gains a key (its indices may move then).
    private var lastDevice: (id: String, state: [String: Reducer.State].Index,
                             applied: [String: (position: Int64, recordedAt: Date)].Index)?

    /// A fold with no device yet.
    package init(reducer: Reducer) { self.reducer = reducer }

    /// The device an event is about, and its send's link when it belongs to a send stream.
    /// `nil` when this projection does not follow it (a send of another provider, a stream of
    /// another kind). A send's own `SendRequested` makes the link.
    ///
    /// Stream categories are told by their ASCII prefix's bytes: `hasPrefix` compares characters,
    /// and its grapheme breaking was a visible part of every event's fold. (Stream ids are ASCII,
    /// by the store's rule.)
    package mutating func route(_ event: LoggedEvent) throws -> (device: String, send: SendRequested?)? {
        if event.streamID.utf8.starts(with: "send-".utf8) {
            if event.type == SendRequested.eventType {
                let request = try decoder.decode(SendRequested.self, from: event.data)
                guard reducer.followedProviders.contains(request.provider) else { return nil }
                let link = SendLink(deviceStreamID: request.deviceStreamID.rawValue, request: request)
                links[event.streamID] = link
                newLinks[event.streamID] = link
                return (link.deviceStreamID, request)
            }
            guard let link = links[event.streamID] else { return nil }
            return (link.deviceStreamID, link.request)
        }
        if event.streamID.utf8.starts(with: "device-".utf8) { return (event.streamID, nil) }
        if event.streamID.utf8.starts(with: "decision-".utf8) {
            return (try decoder.decode(DecisionDevice.self, from: event.data).device_stream_id, nil)
        }
        return nil
    }

    /// Applies one event; `loaded` gives a device's stored state the first time it is touched
    /// (nil: the device is new).
    package mutating func fold(_ event: LoggedEvent, loaded: (String) throws -> Reducer.State? = { _ in nil }) throws {
        guard let (device, send) = try route(event) else { return }
        let (reducer, deviceEvent) = (reducer, DeviceEvent(record: event, deviceStreamID: device, send: send, decoder: decoder))
        if let last = lastDevice, last.id == device {
            try reducer.apply(deviceEvent, to: &states.values[last.state])
            lastApplied.values[last.applied] = (event.position, event.recordedAt)
            return
        }
        if let index = states.index(forKey: device) {
            // In place, found once: no copy of the state (asking `states[device] == nil` copied
            // it out and back, and a fresh initial state was made for every event).
            try reducer.apply(deviceEvent, to: &states.values[index])
            if let applied = lastApplied.index(forKey: device) {
                lastApplied.values[applied] = (event.position, event.recordedAt)
                lastDevice = (device, index, applied)
                return
            }
        } else {
            var state = try loaded(device) ?? reducer.initialState()
            try reducer.apply(deviceEvent, to: &state)
            states[device] = state
        }
        lastDevice = nil
        lastApplied[device] = (event.position, event.recordedAt)
    }

    /// The send streams among `events` whose links are neither known nor made within `events`:
    /// an incremental step loads these from the projection's table first.
    package func unknownSendStreams(in events: [LoggedEvent]) -> Set<String> {
        var madeHere = Set<String>()
        var unknown = Set<String>()
        for event in events where event.streamID.utf8.starts(with: "send-".utf8) {
            if event.type == SendRequested.eventType {
                madeHere.insert(event.streamID)
            } else if links[event.streamID] == nil, !madeHere.contains(event.streamID) {
                unknown.insert(event.streamID)
            }
        }
        return unknown
    }
}
