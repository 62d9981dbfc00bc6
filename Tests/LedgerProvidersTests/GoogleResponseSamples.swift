import Foundation
import LedgerProviders
import Testing

/// Google App Conversion Tracking API, "Sample Responses": the six answers, copied verbatim from
/// the document.
enum GoogleResponseSamples {
    // "An example of a conversion tracking response when the request contained errors is:"
    static let errorSample = #"""
        {
          "ad_events": [],
          "errors": ["INVALID_CURRENCY_CODE"],
          "attributed": false
        }
        """#

    // "An example of a negative conversion tracking response is:"
    static let negativeSample = #"""
        {
          "ad_events": [],
          "errors": [],
          "attributed": false
        }
        """#

    // "An example of an affirmative conversion tracking response for a Universal App Campaign is:"
    static let uacSample = #"""
        {
          "ad_events": [{
            "ad_event_id": "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ",
            "conversion_metric": "conversion",
            "interaction_type": null,
            "campaign_type": "UAC",
            "campaign_id": 123456789,
            "campaign_name": "My App Campaign",
            "ad_type": "ClickToDownload",
            "external_customer_id": 123456789,
            "location": 21144,
            "network_type": "Search",
            "network_subtype": "GoogleSearch",
            "video_id": null,
            "keyword": null,
            "match_type": null,
            "placement": null,
            "ad_group_id": null,
            "creative_id": null,
            "timestamp": 1432681913.123456
          }],
          "errors": [],
          "attributed": true
        }
        """#

    // "An example of an affirmative conversion tracking response for a Search campaign is:"
    static let searchSample = #"""
        {
          "ad_events": [{
            "ad_event_id": "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ",
            "conversion_metric": "conversion",
            "interaction_type": null,
            "campaign_type": "Search",
            "campaign_id": 123456789,
            "campaign_name": "My App Campaign",
            "ad_type": "ClickToDownload",
            "external_customer_id": 123456789,
            "location": 21144,
            "network_type": "Search",
            "network_subtype": "GoogleSearch",
            "video_id": null,
            "keyword": "+space +birds",
            "match_type": "b",
            "placement": null,
            "ad_group_id": 123456789,
            "creative_id": 123456789,
            "timestamp": 1432681913.123456
          }],
          "errors": [],
          "attributed": true
        }
        """#

    // "An example of an affirmative conversion tracking response for a Display campaign is:"
    static let displaySample = #"""
        {
          "ad_events": [{
            "ad_event_id": "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ",
            "conversion_metric": "conversion",
            "interaction_type": null,
            "campaign_type": "Display",
            "campaign_id": 123456789,
            "campaign_name": "My App Campaign",
            "ad_type": "ClickToDownload",
            "external_customer_id": 123456789,
            "location": 21144,
            "network_type": "Display",
            "network_subtype": "mGDN",
            "video_id": null,
            "keyword": null,
            "match_type": null,
            "placement": "mobile-app::2-343200656",
            "ad_group_id": 123456789,
            "creative_id": 123456789,
            "timestamp": 1432681913.123456
          }],
          "errors": [],
          "attributed": true
        }
        """#

    // "An example of an affirmative conversion tracking response for a YouTube campaign is:"
    static let youTubeSample = #"""
        {
          "ad_events": [{
            "ad_event_id": "Q2owS0VRancwZHk0QlJDdXVMX2U1TQ",
            "conversion_metric": "conversion",
            "interaction_type": null,
            "campaign_type": "Video",
            "campaign_id": 123456789,
            "campaign_name": "My App Campaign",
            "ad_type": "ClickToDownload",
            "external_customer_id": 123456789,
            "location": 21144,
            "network_type": "YouTube",
            "network_subtype": "YouTubeVideos",
            "video_id": "dQw4w9WgXcQ",
            "keyword": null,
            "match_type": null,
            "placement": null,
            "ad_group_id": 123456789,
            "creative_id": 123456789,
            "timestamp": 1432681913.123456
          }],
          "errors": [],
          "attributed": true
        }
        """#
}
