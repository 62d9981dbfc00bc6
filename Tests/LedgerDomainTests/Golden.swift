/// Golden encodings: the exact bytes stored for the samples. A change here changes what the ledger
/// stores for an existing schema version, which is never allowed: add a schema version instead.
enum Golden {
    static let firstOpen = #"""
        {"adservices_token":{"issued_at":"2024-05-01T12:34:56.123456Z","token":"eyJhbGciOiJSUzI1NiJ9+abc/de="},"app_id":"com.example.game","deep_link":{"gbraid":"0AAAAAx","gclid":"abc","link_click_id":"1234567","url":"https://example.com/open?gclid=abc","wbraid":"1BBBBy"},"device":{"app_version":"3.2.0","att_status":"authorized","bundle_id":"com.example.game","custom_user_id":"user-1","idfa":"EA7583CD-A667-48BC-B806-42ECB2B48606","idfv":"9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D","ip":"203.0.113.7","limit_ad_tracking":false,"os_version":"17.4.1","platform":"ios","sdk_version":"1.0.0","user_agent":{"app_name":"ExampleGame","app_version":"3.2.0","build":"21E236","device_model":"iPhone15,2","locale":"en_US","os_name":"iOS","os_version":"17.4.1"}}}
        """#

    static let sendAttempted = #"""
        {"attempt":1,"request":{"body":{"content":"{\"app_event_data\":{\"level\":3}}","encoding":"utf8"},"headers":[{"name":"User-Agent","value":"ExampleGame/3.2.0 (iOS 17.4.1; en_US; iPhone15,2; Build/21E236; Proxy)"},{"name":"X-Forwarded-For","value":"203.0.113.7"}],"method":"POST","url":"https://www.googleadservices.com/pagead/conversion/app/1.0?dev_token=REDACTED&rdid=EA7583CD-A667-48BC-B806-42ECB2B48606"}}
        """#

    static let attributionDecided = #"""
        {"candidates":[{"ad_event_id":"ae-1","ad_group_id":"456","campaign_id":"123","campaign_name":"Spring","creative_id":"1011","interaction":"click","keyword_id":"789","outcome":"won","source":"google","time":"2024-05-01T12:34:56.123456Z"},{"campaign_id":"42","interaction":"view","outcome":"view_beaten_by_click","source":"apple_adservices","time":"2024-05-01T12:35:01.500000Z"}],"decision_id":"3d2c1b0a-0000-4000-8000-000000000002","device_stream_id":"device-com.example.game/install-42","input_positions":[10,12,15],"organic":false,"rule_version":"last-click-v1","supersedes":"3d2c1b0a-0000-4000-8000-000000000003","trigger_event_id":"3d2c1b0a-0000-4000-8000-000000000001","trigger_kind":"install","winner":{"ad_event_id":"ae-1","ad_group_id":"456","campaign_id":"123","campaign_name":"Spring","creative_id":"1011","interaction":"click","keyword_id":"789","source":"google","time":"2024-05-01T12:34:56.123456Z"}}
        """#

    static let deviceUserAgentRecorded = #"""
        {"user_agent":"Mozilla/5.0 (iPhone; CPU iPhone OS 17_4_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148"}
        """#
}
