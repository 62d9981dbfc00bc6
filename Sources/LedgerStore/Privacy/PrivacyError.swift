import Foundation

/// Why the privacy layer refused to seal, reveal or erase. Each case names what to fix; no key or
/// secret is ever part of a message.
public enum PrivacyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No master key is configured, and the database is not the private development cluster (where
    /// a generated key file is used). Set `LEDGER_MASTER_KEY` or `LEDGER_MASTER_KEY_FILE`.
    case masterKeyMissing
    /// A configured master key is not base64 of exactly 32 bytes. `source` names the variable or
    /// file, never the value.
    case masterKeyMalformed(source: String)
    /// A data key was wrapped by a master key that is not configured (neither `LEDGER_MASTER_KEY`
    /// nor `LEDGER_MASTER_KEY_PREVIOUS`); `masterKeyID` is that key's fingerprint.
    case masterKeyUnavailable(masterKeyID: String)
    /// A wrapped data key or a sealed box did not open: it was altered, or the master key with
    /// that fingerprint is not the one that wrapped it.
    case integrity(what: String)
    /// An event carries personal data but its stream names no data subject (a device stream, or a
    /// send stream whose `SendRequested` names the device).
    case noDataSubject(stream: String, eventType: String)
    /// The device has no events in the ledger: there is nothing to erase.
    case unknownDevice(String)
    /// The device stream id is not `device-<app>/<device>`.
    case notADeviceStream(String)

    public var description: String {
        switch self {
        case .masterKeyMissing:
            "no master key is configured: set LEDGER_MASTER_KEY (base64 of 32 bytes) or LEDGER_MASTER_KEY_FILE"
        case .masterKeyMalformed(let source):
            "the master key in \(source) is not base64 of exactly 32 bytes"
        case .masterKeyUnavailable(let id):
            "a data key is wrapped by master key \(id), which is not configured (LEDGER_MASTER_KEY or LEDGER_MASTER_KEY_PREVIOUS)"
        case .integrity(let what):
            "\(what) does not open with the configured keys: it was altered, or another master key wrapped it"
        case .noDataSubject(let stream, let type):
            "\(type) carries personal data but stream \(stream) names no device to encrypt it for"
        case .unknownDevice(let device):
            "no device \(device) in the ledger: nothing to erase"
        case .notADeviceStream(let device):
            "\(device) is not a device stream id (device-<app>/<device>)"
        }
    }
}
