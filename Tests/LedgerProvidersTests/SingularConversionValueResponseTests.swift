import Foundation
import Testing

@testable import LedgerProviders

@Suite("Singular conversion value response and classifier (Singular SKAdNetwork 4 implementation guide)")
struct SingularConversionValueResponseTests {
    static func parse(_ text: String) throws -> SingularConversionValueResponse {
        try SingularConversionValueResponse.parse(Data(text.utf8))
    }

    static func answer(_ status: Int, _ body: String, _ headers: [Header] = []) -> SingularClassifier.Answer {
        .response(ProviderResponse(status: status, headers: headers, body: Data(body.utf8)))
    }

    // Singular SKAdNetwork 4 implementation guide, "Parâmetros de resposta": conversion_value,
    // skan_updated_coarse_value, postback_sequence_index, skan_updated_lock_window_value, status
    // "ok".
    @Test func successfulAnswer() throws {
        let response = try Self.parse(
            #"{"conversion_value":5,"skan_updated_coarse_value":2,"postback_sequence_index":0,"skan_updated_lock_window_value":true,"status":"ok"}"#)
        #expect(response.conversionValue == 5)
        #expect(response.coarseValue == .high)
        #expect(response.postbackSequenceIndex == 0)
        #expect(response.lockWindow == true)
        let update = try SKANConversionUpdate(conversionValue: 5, coarseValue: 2, lockWindow: true, postbackSequenceIndex: 0)
        #expect(response.outcome == .update(update))
        // Stored with Singular's names.
        let encoded = String(decoding: try JSONEncoder().encode(response), as: UTF8.self)
        #expect(encoded.contains(#""skan_updated_coarse_value":2"#))
        #expect(try JSONDecoder().decode(SingularConversionValueResponse.self, from: Data(encoded.utf8)) == response)
    }

    // Singular SKAdNetwork 4 implementation guide snippet: no conversion_value with status "ok" →
    // nothing to update; lock read with boolValue (0/1 accepted), missing lock = NO; null counts as
    // absent.
    @Test func okWithoutValueAndLenientLock() throws {
        #expect(try Self.parse(#"{"status":"ok"}"#).outcome == .noUpdate)
        #expect(try Self.parse(#"{"status":"ok","conversion_value":null}"#).outcome == .noUpdate)
        let numericLock = try Self.parse(#"{"conversion_value":1,"skan_updated_lock_window_value":1}"#)
        #expect(numericLock.lockWindow == true)
        let noLock = try Self.parse(#"{"conversion_value":1}"#)
        #expect(noLock.outcome == .update(try SKANConversionUpdate(conversionValue: 1)))
    }

    // Singular SKAdNetwork 4 implementation guide, "Possíveis erros de resposta": each documented
    // reason is a typed case; unknown ones are kept.
    @Test(arguments: [
        ("More than 24 hours passed since last conversion value update (28032 hours), update window is closed", SingularErrorReason.Kind.updateWindowClosed),
        ("Passaram mais de 24 horas desde a última atualização de conversão (28032 horas), a janela de atualização está fechada", .updateWindowClosed),
        ("Unknown platform error - Non iOS platform", .unknownPlatform),
        ("Conversion Management: Invalid parameter skan_current_conversion_value given", .invalidParameter),
        ("Conversion Management: Conversion model not found for app: com.singular.app", .conversionModelNotFound),
        ("Invalid measurement period: 5", .invalidMeasurementPeriod),
        ("Conversion Management: Can't find owner currency: acme", .ownerCurrencyNotFound),
        ("Something new", .unrecognized),
    ])
    func errorReasons(text: String, kind: SingularErrorReason.Kind) throws {
        let body = "{\"status\":\"error\",\"reason\":\(ProviderJSON.string(text).serialized)}"
        let response = try Self.parse(body)
        #expect(response.outcome == .rejected(SingularErrorReason(text)))
        #expect(SingularErrorReason(text).kind == kind)
        #expect(SingularErrorReason(text).text == text)
        #expect(SingularClassifier.classify(Self.answer(200, body), attempt: 1, now: testNow)
            == .failed(rule: "singular_\(kind.rawValue)", detail: text))
    }

    // Singular SKAdNetwork 4 implementation guide snippet: an error without reason reads "Got error
    // from server".
    @Test func errorWithoutReason() throws {
        #expect(try Self.parse(#"{"status":"error"}"#).outcome == .rejected(SingularErrorReason("Got error from server")))
        #expect(try Self.parse(#"{}"#).outcome == .rejected(SingularErrorReason("Got error from server")))
    }

    // Singular SKAdNetwork 4 implementation guide snippet, validateValues: "Illegal values
    // recieved" → a ProviderError naming the field.
    @Test func illegalValuesAreRefused() {
        let cases: [(String, String, String)] = [
            (#"{"conversion_value":64}"#, "conversion_value", "range_0_63"),
            (#"{"conversion_value":-1}"#, "conversion_value", "range_0_63"),
            (#"{"conversion_value":99999999999999999999999}"#, "conversion_value", "range_0_63"),
            (#"{"conversion_value":1,"skan_updated_coarse_value":3}"#, "skan_updated_coarse_value", "range_0_2"),
            (#"{"status":"ok","skan_updated_coarse_value":-1}"#, "skan_updated_coarse_value", "range_0_2"),
            (#"{"conversion_value":1,"postback_sequence_index":3}"#, "postback_sequence_index", "range_0_2"),
            (#"{"conversion_value":1.5}"#, "conversion_value", "not_integer"),
            (#"{"conversion_value":1e400}"#, "conversion_value", "not_integer"),
            (#"{"conversion_value":"7"}"#, "conversion_value", "not_integer"),
            (#"{"conversion_value":1,"skan_updated_lock_window_value":"yes"}"#, "skan_updated_lock_window_value", "not_boolean"),
            (#"{"conversion_value":1,"skan_updated_lock_window_value":2}"#, "skan_updated_lock_window_value", "not_boolean"),
            (#"{"status":5}"#, "status", "not_string"),
            (#"{"status":"error","reason":[]}"#, "reason", "not_string"),
            (#"[1]"#, "$", "not_object"),
            (#"{"conversion_value":"#, "$", "not_json"),
        ]
        for (body, field, rule) in cases {
            expectProviderError(field: field, rule: rule, kind: .malformedResponse) { _ = try Self.parse(body) }
        }
        #expect(SingularClassifier.classify(Self.answer(200, #"{"conversion_value":64}"#), attempt: 1, now: testNow)
            == .failed(rule: "singular_malformed_response", detail: "singular: conversion_value: Illegal values: conversion_value 64 is not in 0...63 (Singular SKAdNetwork 4 implementation guide, validateValues). [range_0_63]"))
    }

    // Classifier: 200 ok succeeded; 5xx / timeouts retry with back-off (3 times); 429 honours Retry-After;
    // other 4xx terminal.
    @Test func classifier() {
        #expect(SingularClassifier.classify(Self.answer(200, #"{"status":"ok","conversion_value":3}"#), attempt: 1, now: testNow) == .succeeded)
        #expect(SingularClassifier.classify(Self.answer(200, #"{"status":"ok"}"#), attempt: 1, now: testNow) == .succeeded)
        for (answer, rule) in [
            (Self.answer(502, ""), "singular_5xx_retry"), (SingularClassifier.Answer.timedOut, "singular_timeout_retry"),
            (.transportFailed(detail: "refused"), "singular_transport_retry"),
        ] {
            #expect(SingularClassifier.classify(answer, attempt: 1, now: testNow) == .retry(notBefore: testNow.addingTimeInterval(2), rule: rule))
            #expect(SingularClassifier.classify(answer, attempt: 3, now: testNow) == .retry(notBefore: testNow.addingTimeInterval(8), rule: rule))
            guard case .failed(let failed, _) = SingularClassifier.classify(answer, attempt: 4, now: testNow) else {
                Issue.record("the fourth failure must be terminal")
                continue
            }
            #expect(failed == "singular_retries_exhausted")
        }
        #expect(SingularClassifier.classify(Self.answer(429, "", [Header("Retry-After", "90")]), attempt: 1, now: testNow)
            == .retry(notBefore: testNow.addingTimeInterval(90), rule: "singular_429_backoff"))
        guard case .failed(let rule, _) = SingularClassifier.classify(Self.answer(403, "{}"), attempt: 1, now: testNow) else {
            Issue.record("4xx must be terminal")
            return
        }
        #expect(rule == "singular_http_4xx")
    }

    // The parsed answer feeds the state: the Singular SKAdNetwork 4 implementation guide's response
    // → valuesHasBeenUpdated.
    @Test func answerAppliesToState() throws {
        var state = SKANDeviceState()
        state.register(at: testNow)
        let response = try Self.parse(#"{"conversion_value":12,"skan_updated_coarse_value":1,"postback_sequence_index":0,"status":"ok"}"#)
        guard case .update(let update) = response.outcome else {
            Issue.record("expected an update")
            return
        }
        let step1 = try state.applyConversionUpdate(update, at: testNow.addingTimeInterval(60))
        #expect(step1 == .appliedP0)
        #expect(state.conversionValue == 12)
        #expect(state.previousFineValue == 0)
        #expect(state.p0Coarse == .medium)
    }
}
