import Foundation
import LedgerDomain
import Testing

@testable import LedgerFolds

/// The rebuild's byte-level reads of hot payloads must agree with `JSONDecoder`, or step aside.
@Suite("Payload members read from bytes")
struct PayloadMembersTests {
    @Test("SKANConversionValueUpdated read from bytes equals JSONDecoder's reading, or steps aside", arguments: [
        (#"{"fine_value":12,"lock_window":false}"#, true),
        (#"{"coarse_value":"high","lock_window":true}"#, true),
        (#"{ "lock_window" : true , "fine_value" : null , "coarse_value" : "low" , "note" : {"a":[1,"}"]} }"#, true),
        (#"{"fine_value":-3,"lock_window":false}"#, true),
        (#"{"fine_value":1.5,"lock_window":false}"#, false),
        (#"{"fine_value":12}"#, false),
        (#"{"fine_value":12,"lock_window":"no"}"#, false),
        (#"{"coarse_value":"huge","lock_window":false}"#, false),
        (#"{"fine_value":1,"fine_value":2,"lock_window":false}"#, false),
        (#"{"fine\u005fvalue":1,"lock_window":false}"#, false),
        (#"{"fine_value":1,"lock_window":false} x"#, false),
    ])
    func quickUpdate(json: String, readsAsBytes: Bool) throws {
        let quick = SKANDeviceReducer.quickUpdate(Data(json.utf8))
        #expect((quick != nil) == readsAsBytes)
        if let quick {
            let decoded = try JSONDecoder().decode(SKANConversionValueUpdated.self, from: Data(json.utf8))
            #expect(quick.fineValue == decoded.fineValue && quick.coarseValue == decoded.coarseValue
                    && quick.lockWindow == decoded.lockWindow)
        }
    }

    @Test("RevenueRecorded's three fields read from bytes equal JSONDecoder's reading, or step aside", arguments: [
        (#"{"device":{"idfa":"A"},"revenue":{"amount":"1.99","currency":"USD"},"kind":"iap","transaction_id":"t-1"}"#, true),
        (#"{"revenue":{"currency":"EUR","amount":"-0.5","note":[1]},"kind":"ad_monetization"}"#, true),
        (#"{"revenue":{"amount":"100","currency":"JPY"},"kind":"iap","transaction_id":null}"#, true),
        (#"{ "kind" : "iap" , "revenue" : { "amount" : "3" , "currency" : "GBP" } }"#, true),
        (#"{"revenue":{"amount":1.99,"currency":"USD"},"kind":"iap"}"#, false),  // a number: the decoder refuses it
        (#"{"revenue":{"amount":"1e3","currency":"USD"},"kind":"iap"}"#, false),  // not plain decimal notation
        (#"{"revenue":{"amount":"1.99","currency":"usd"},"kind":"iap"}"#, false),  // not an ISO 4217 shape
        (#"{"revenue":{"amount":"1.99","currency":"USD"},"kind":"refund"}"#, false),
        (#"{"revenue":{"amount":"1.99","amount":"2","currency":"USD"},"kind":"iap"}"#, false),
        (#"{"revenue":{"amount":"1.99","currency":"USD"},"kind":"iap","transaction_id":"t\"1"}"#, false),
        (#"{"revenue":{"amount":"1.99","currency":"USD"},"kind":"iap","transaction_id":7}"#, false),
        (#"{"revenue":{"amount":"1.99","currency":"USD"}}"#, false),
        (#"{"revenue":"1.99","kind":"iap"}"#, false),
        (#"{"revenue":{"amount":"1","currency":"USD","currency":"EUR"},"kind":"iap"}"#, false),
        (#"{"revenue":null,"kind":"iap"}"#, false),
        (#"{"revenue":{"amount":"1","currency":"USD"},"kind":"iap","transaction_id":""}"#, true),
        (#"{"revenue":{"amo\u0075nt":"1","currency":"USD"},"kind":"iap"}"#, false),
        ("{\"revenue\":{\"amount\":\"1\",\"currency\":\"USD\"},\"kind\":\"iap\",\"transaction_id\":\"a\tb\"}", false),
    ])
    func quickRevenue(json: String, readsAsBytes: Bool) throws {
        // Bytes that are not JSON (a raw tab in a string) step aside at the scan already.
        guard let payload = PayloadMembers(Data(json.utf8)) else {
            #expect(!readsAsBytes)
            return
        }
        let quick = SKANDeviceReducer.quickRevenue(payload)
        #expect((quick != nil) == readsAsBytes)
        if let quick {
            let decoded = try JSONDecoder().decode(SKANDeviceReducer.RevenueFields.self, from: Data(json.utf8))
            #expect(quick.revenue == decoded.revenue && quick.kind == decoded.kind && quick.transactionID == decoded.transactionID)
        }
    }

    @Test("the slim object keeps exactly the named members, byte for byte")
    func slimObject() throws {
        let json = #"{"device":{"idfa":"A","ua":{"x":"}\"]"}},"revenue":{"amount":"1.99","currency":"USD"},"kind":"in_app_purchase","transaction_id":"t-1"}"#
        let members = try #require(PayloadMembers(Data(json.utf8)))
        let slim = members.object(keeping: ["revenue", "kind", "transaction_id"])
        #expect(String(decoding: slim, as: UTF8.self)
                == #"{"revenue":{"amount":"1.99","currency":"USD"},"kind":"in_app_purchase","transaction_id":"t-1"}"#)
        #expect(PayloadMembers(Data(#"{"a":1"#.utf8)) == nil)
        #expect(PayloadMembers(Data(#"[1]"#.utf8)) == nil)
        #expect(try #require(PayloadMembers(Data("{}".utf8))).count == 0)
        #expect(try #require(PayloadMembers(Data(json.utf8))).count == 4)
    }
}
