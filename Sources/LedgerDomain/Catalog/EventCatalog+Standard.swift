import Foundation

extension EventCatalog {
    /// Every event type of the ledger, every schema version.
    public static let standard = EventCatalog([
        // Device
        FirstOpen.self, SessionStarted.self, InAppEventRecorded.self, RevenueRecorded.self,
        AdServicesTokenReceived.self, DeepLinkOpened.self, IAdAttributionDetailsReceived.self,
        SKANRegistered.self, SKANConversionValueUpdated.self, TrackingConsentChanged.self, DeviceUserAgentRecorded.self,
        // Send lifecycle
        SendRequested.self, SendAttempted.self, ResponseReceived.self, RetryScheduled.self,
        SendSucceeded.self, SendFailed.self, SendOutcomeUnknown.self, SendParked.self, SendUnparked.self, SendCancelled.self,
        // Decisions, privacy, SKAN postbacks
        AttributionDecided.self, ErasureCompleted.self, SKANPostbackReceived.self,
        SKANConversionModelConfigured.self, AAKPostbackReceived.self,
    ])
}
