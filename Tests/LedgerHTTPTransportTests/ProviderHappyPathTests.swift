import Foundation
import LedgerDispatch
import LedgerFakeProviders
import LedgerHTTPTransport
import LedgerDomain
import LedgerProviders
import LedgerTestKit
import Testing

/// Each provider's documented exchange, built with the real builders, sent over real HTTP on
/// loopback by the production transport, answered by the fakes, read back by the real parsers.
@Suite("Transport ↔ fakes: the documented exchanges")
struct ProviderHappyPathTests {
    // Google App Conversion Tracking API: conversion request without a body carries Content-Length:
    // 0; an affirmative answer carries an ad_event_id; the cross-network request answers a bare 200
    // with an empty body.
    @Test func googleConversionThenCrossNetwork() async throws {
        try await withFakes { fakes, transport in
            let builder = GoogleSample.builder(fakes)
            let event = try GoogleSample.event(.firstOpen)
            let request = try builder.conversionRequest(for: event)
            let answer = try await send(transport, request)
            #expect(answer.response.status == 200)
            #expect(answer.latency > .zero)
            let parsed = try GoogleConversionResponse.parse(answer.response.body)
            #expect(parsed.attributed)
            #expect(parsed.adEvents.count == 1)
            let adEventID = try #require(parsed.lastClick?.adEventID)
            #expect(fakes.google.issuedAdEventIDs == [adEventID])
            #expect(parsed.adEvents[0].campaignType == "UAC")

            let received = try #require(fakes.google.conversionRequests.first)
            #expect(received.method == "POST")
            #expect(received.rawQuery == request.encodedQuery)
            #expect(received.queryValue("dev_token") == "Z_eErE4DkvcKjDM1OVE4c4")
            #expect(received.headerValue("Content-Length") == "0")
            #expect(received.body.isEmpty)
            let names = received.headers.map { $0.name.lowercased() }
            let sent = ["user-agent", "x-forwarded-for", "content-type"]
            #expect(names.filter { sent.contains($0) } == sent, "headers go out in the built order: \(names)")
            #expect(received.headerValue("User-Agent") == request.headerValue("User-Agent"))

            let crossNetwork = try builder.crossNetworkRequest(for: event, adEventID: adEventID, attributed: true)
            let crossAnswer = try await send(transport, crossNetwork)
            #expect(crossAnswer.response.status == 200)
            #expect(crossAnswer.response.body.isEmpty)
            let crossReceived = try #require(fakes.google.crossNetworkRequests.first)
            #expect(crossReceived.headerValue("Content-Length") == "0")
            #expect(crossReceived.queryValue("ad_event_id") == adEventID)
            #expect(crossReceived.queryValue("attributed") == "1")
            #expect(fakes.anomalies.isEmpty, "\(fakes.anomalies)")
        }
    }

    // The Google App Conversion Tracking API's sample with app_event_data: the body arrives byte
    // for byte.
    @Test func googleBodyArrivesByteForByte() async throws {
        try await withFakes { fakes, transport in
            let data = GoogleEventData(["item_id": .array([.string("Crayons"), .string("Markers")])])
            let request = try GoogleSample.builder(fakes).conversionRequest(
                for: GoogleSample.event(.inAppPurchase, value: "1.99", currency: "USD", eventData: data))
            let answer = try await send(transport, request)
            #expect(answer.response.status == 200)
            let received = try #require(fakes.google.requests.first)
            #expect(received.body == request.body)
            #expect(received.bodyText == #"{"app_event_data":{"item_id":["Crayons","Markers"]}}"#)
            #expect(received.headerValue("Content-Length") == String(request.body?.count ?? -1))
            #expect(fakes.anomalies.isEmpty, "\(fakes.anomalies)")
        }
    }

    // Google App Conversion Tracking API: negative answers, errors[] codes and 5xx all come back as
    // answers, not errors.
    @Test func googleNegativeErrorsAndServerErrors() async throws {
        try await withFakes { fakes, transport in
            let request = try GoogleSample.builder(fakes).conversionRequest(for: GoogleSample.event(.sessionStart))
            fakes.google.setDefaultAnswer(.negative)
            let negative = try GoogleConversionResponse.parse(try await send(transport, request).response.body)
            #expect(!negative.attributed && negative.adEvents.isEmpty && negative.errors.isEmpty)

            fakes.google.enqueue(.googleErrors(["INVALID_CURRENCY_CODE"]))
            let errors = try GoogleConversionResponse.parse(try await send(transport, request).response.body)
            #expect(errors.errors.map(\.raw) == ["INVALID_CURRENCY_CODE"])

            fakes.google.setDefaultAnswer(.errors(["timestamp_invalid"]))
            let lower = try GoogleConversionResponse.parse(try await send(transport, request).response.body)
            #expect(lower.errors.first?.matches(.timestampInvalid) == true)

            fakes.google.setDefaultAnswer(.status(503))
            #expect(try await send(transport, request).response.status == 503)
            fakes.google.enqueue(.status(500, body: "oops"))
            let scripted = try await send(transport, request)
            #expect(scripted.response.status == 500)
            #expect(String(decoding: scripted.response.body, as: UTF8.self) == "oops")
            #expect(fakes.google.requestCount == 5)
        }
    }

    // Apple AdServices attribution API: 404 too soon after the token was made, twice, then the
    // record: scripted.
    @Test func appleScripted404404Then200() async throws {
        try await withFakes { fakes, transport in
            let request = try AppleSample.request(fakes, token: "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=")
            fakes.apple.enqueue(.status(404), .status(404))
            var statuses: [Int] = []
            var last: TransportResponse?
            for _ in 0..<3 {
                let answer = try await send(transport, request)
                statuses.append(answer.response.status)
                last = answer
            }
            #expect(statuses == [404, 404, 200])
            let payload = try AdServicesAttribution.parse(try #require(last).response.body)
            #expect(payload.attribution)
            #expect(payload.orgId == 40_669_820)
            #expect(payload.claimType == .click)
            let received = try #require(fakes.apple.requests.last)
            #expect(received.headerValue("Content-Type") == "text/plain")
            #expect(received.bodyText == "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=")
            #expect(fakes.anomalies.isEmpty, "\(fakes.anomalies)")
        }
    }

    // Apple AdServices attribution API: the same sequence from the model (ready after two lookups),
    // then 400, 500 and attribution false.
    @Test func appleReadinessInvalidServerErrorAndNoMatch() async throws {
        try await withFakes { fakes, transport in
            let token = "dG9rZW4tb25l"
            fakes.apple.register(token: token, readiness: .afterLookups(2), outcome: .attributed(detailed: true))
            let request = AdServicesRequestBuilder.attributionRequest(
                token: try AdServicesToken(token), endpoint: fakes.appleEndpoint)
            var statuses: [Int] = []
            var body = Data()
            for _ in 0..<3 {
                let answer = try await send(transport, request)
                statuses.append(answer.response.status)
                body = answer.response.body
            }
            #expect(statuses == [404, 404, 200])
            #expect(fakes.apple.lookups(of: token) == 3)
            #expect(try AdServicesAttribution.parse(body).kind == .detailed)

            fakes.apple.markInvalid(token: token)
            #expect(try await send(transport, request).response.status == 400)
            fakes.apple.enqueue(.status(500))
            #expect(try await send(transport, request).response.status == 500)

            let other = "b3RoZXItdG9rZW4="
            fakes.apple.register(token: other, outcome: .notAttributed)
            let miss = try await send(
                transport,
                AdServicesRequestBuilder.attributionRequest(token: try AdServicesToken(other), endpoint: fakes.appleEndpoint))
            #expect(miss.response.status == 200)
            #expect(try AdServicesAttribution.parse(miss.response.body).attribution == false)

            fakes.apple.expire(token: other)
            #expect(
                try await send(
                    transport,
                    AdServicesRequestBuilder.attributionRequest(token: try AdServicesToken(other), endpoint: fakes.appleEndpoint)
                ).response.status == 404)
        }
    }

    // Apple AdServices attribution API: "The token has a time to live (TTL) of 24 hours": by the
    // fake's clock, 23:59:59 after the token was made the record is found; at 24:00:00 and later
    // Apple answers 404, and a client sending such a token is noted.
    @Test func appleTokenPastItsTTLIs404() async throws {
        try await withFakes { fakes, transport in
            let issued = Date(timeIntervalSince1970: 1_700_000_000)
            let now = ManualClock(issued.addingTimeInterval(FakeAppleAdServices.tokenLifetime - 1))
            fakes.apple.setClock(now)
            let token = "dHRsLXRva2Vu"
            fakes.apple.register(token: token, outcome: .attributed(), issuedAt: issued)
            fakes.expectAnomaly(.appleAdServices, "token_ttl", count: 2)  // the two lookups at and after 24:00:00
            let request = AdServicesRequestBuilder.attributionRequest(
                token: try AdServicesToken(token), endpoint: fakes.appleEndpoint)
            #expect(try await send(transport, request).response.status == 200)
            #expect(fakes.anomalies.isEmpty, "\(fakes.anomalies)")
            now.set(issued.addingTimeInterval(FakeAppleAdServices.tokenLifetime))
            #expect(try await send(transport, request).response.status == 404)
            #expect(fakes.anomalies.map(\.rule) == ["token_ttl"])
            now.set(issued.addingTimeInterval(FakeAppleAdServices.tokenLifetime + 3_600))
            #expect(try await send(transport, request).response.status == 404)
        }
    }

    // Branch v1/open server-to-server guide: the first open gets a randomized_bundle_token; the
    // next open carries it; an open without it is an anomaly (and Branch issues a new identity).
    @Test func branchTokenIssuedThenRequired() async throws {
        try await withFakes { fakes, transport in
            fakes.branch.setRapidRepeatInterval(.zero)
            fakes.expectAnomaly(.branch, "missing_randomized_bundle_token")  // the forgetful open below
            let configuration = BranchSample.configuration(fakes)
            let first = try await send(transport, try BranchSample.open(firstSession: true).build(with: configuration))
            #expect(first.response.status == 200)
            let firstAnswer = try BranchOpenResponse.parse(first.response.body)
            let token = try #require(firstAnswer.randomizedBundleToken)
            #expect(firstAnswer.randomizedDeviceToken != nil)
            #expect(firstAnswer.data?.isFirstSession == true)
            #expect(fakes.branch.bundleToken(forDevice: "0C381C08-B808-4C25-BE51-B00BC165B5F8") == token)

            let second = try await send(
                transport, try BranchSample.open(firstSession: false, token: token).build(with: configuration))
            let secondAnswer = try BranchOpenResponse.parse(second.response.body)
            #expect(secondAnswer.randomizedBundleToken == token)
            #expect(secondAnswer.data?.isFirstSession == false)
            #expect(fakes.branch.anomalies.isEmpty, "\(fakes.branch.anomalies)")

            // The builder refuses `first_session: false` without the token; with first_session
            // left out it cannot know, and the fake notices.
            let forgetful = try await send(transport, try BranchSample.open(firstSession: nil).build(with: configuration))
            #expect(forgetful.response.status == 200)
            #expect(fakes.branch.anomalies.map(\.rule) == ["missing_randomized_bundle_token"])
            #expect(try BranchOpenResponse.parse(forgetful.response.body).randomizedBundleToken != token)

            let received = try #require(fakes.branch.requests.first)
            #expect(received.headerValue("X-IP-Override") == "8.8.4.4")
            #expect(received.headerValue("Content-Type") == "application/json")
            #expect(fakes.branch.opens(forDevice: "0C381C08-B808-4C25-BE51-B00BC165B5F8") == 3)
        }
    }

    // Branch v1/open server-to-server guide: "we will return 429 responses if the app starts
    // sending requests for the same user in rapid succession".
    @Test func branch429OnRapidRepeats() async throws {
        try await withFakes { fakes, transport in
            fakes.branch.setRapidRepeatInterval(.seconds(30))
            fakes.branch.setRetryAfter(seconds: 120)
            let configuration = BranchSample.configuration(fakes)
            let first = try await send(transport, try BranchSample.open(firstSession: true).build(with: configuration))
            let token = try #require(try BranchOpenResponse.parse(first.response.body).randomizedBundleToken)
            let repeatOpen = try BranchSample.open(firstSession: false, token: token).build(with: configuration)
            let second = try await send(transport, repeatOpen)
            #expect(second.response.status == 429)
            #expect(second.response.headerValue("Retry-After") == "120")
            #expect(try await send(transport, repeatOpen).response.status == 429)
            // Another device is not held back.
            let other = try await send(
                transport,
                try BranchSample.open(idfv: "11111111-2222-4333-8444-555555555555", firstSession: true).build(
                    with: configuration))
            #expect(other.response.status == 200)
            #expect(fakes.branch.opens(forDevice: "0C381C08-B808-4C25-BE51-B00BC165B5F8") == 1)
            #expect(fakes.branch.requestCount == 4)
            #expect(fakes.branch.deviceCount == 2)
        }
    }

    // Singular SKAdNetwork 4 implementation guide: the conversion value API answers the fake's
    // model; status errors on demand.
    @Test func singularConversionValues() async throws {
        try await withFakes { fakes, transport in
            let now = Date()
            let configuration = SingularSample.configuration(fakes)
            let request = try SingularSample.request(now: now).build(with: configuration, at: now)
            let first = try SingularConversionValueResponse.parse(try await send(transport, request).response.body)
            #expect(first.status == "ok")
            #expect(first.conversionValue == 1)
            #expect(first.coarseValue?.rawValue == 0)
            #expect(first.postbackSequenceIndex == 0)
            #expect(first.lockWindow == false)
            guard case .update(let update) = first.outcome else {
                Issue.record("expected an update, got \(first.outcome)")
                return
            }
            #expect(update.conversionValue == 1)

            let paid = try SingularSample.request(revenueUSD: "19.99", now: now).build(with: configuration, at: now)
            let second = try SingularConversionValueResponse.parse(try await send(transport, paid).response.body)
            #expect(second.conversionValue == 2)
            #expect(second.coarseValue?.rawValue == 2)

            fakes.singular.enqueue(.singularError("Conversion management: Conversion model not found for app: x"))
            let refused = try SingularConversionValueResponse.parse(try await send(transport, request).response.body)
            guard case .rejected(let reason) = refused.outcome else {
                Issue.record("expected a rejection, got \(refused.outcome)")
                return
            }
            #expect(reason.kind == .conversionModelNotFound)

            let received = try #require(fakes.singular.requests.first)
            #expect(received.method == "GET")
            #expect(received.rawQuery == request.encodedQuery)
            #expect(received.queryValue("a") == "sdk_key_here")
            #expect(received.headerValue("Content-Length") == nil, "a GET carries no body framing")
            #expect(fakes.singular.eventsSeen(idfv: "21DB6612-09B3-4ECC-84AC-B353B0AF1334") == 2)
            #expect(fakes.anomalies.isEmpty, "\(fakes.anomalies)")
        }
    }
}
