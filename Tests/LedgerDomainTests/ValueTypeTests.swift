import Foundation
import LedgerDomain
import Testing

@Suite("Value types")
struct ValueTypeTests {
    @Test("app ids are 1–100 stream-safe characters")
    func appIDs() throws {
        #expect(try AppID("com.example.game").rawValue == "com.example.game")
        for bad in ["", "com example", "app/1", "app\u{0}", String(repeating: "a", count: 101)] {
            #expect(throws: RuleViolation.self) { try AppID(bad) }
        }
    }

    @Test("device ids are 1–128 characters without control characters")
    func deviceIDs() throws {
        #expect(try DeviceID("ünïcode is fine").rawValue == "ünïcode is fine")
        #expect(throws: RuleViolation.self) { try DeviceID("") }
        #expect(throws: RuleViolation.self) { try DeviceID(String(repeating: "a", count: 129)) }
        do {
            _ = try DeviceID("tab\there")
            Issue.record("accepted")
        } catch {
            #expect(error.rule == "no_control_characters")
        }
    }

    @Test("money is exact, validated, and never a binary float")
    func money() throws {
        let usd = try CurrencyCode("USD")
        let price = try Money(amount: "19.99", currency: usd)
        #expect(price.amount == Decimal(string: "19.99"))
        #expect(price.amountText == "19.99")
        #expect(try Money(amount: "19.990", currency: usd) == price)
        #expect(try Money(amount: "-0.005", currency: usd).amountText == "-0.005")
        #expect(try Money(amount: "12345678901234567890123456789012345678", currency: usd).amountText
            == "12345678901234567890123456789012345678")
        for bad in ["", "1e3", "1,5", "+1", "--1", "1.2.3", " 1", "123456789012345678901234567890123456789"] {
            #expect(throws: RuleViolation.self) { try Money(amount: bad, currency: usd) }
        }
        #expect(throws: RuleViolation.self) { try Money(amount: Decimal.nan, currency: usd) }
        // Text that reads as an amount prints back as text that reads (the text path skips the
        // Decimal path's encode check on that ground), at the digit limit and with zeros to drop.
        let edges = ["99999999999999999999999999999999999999", "-99999999999999999999999999999999999999",
                     "0.0000000000000000000000000000000000001", "10000000000000000000000000000000000000",
                     "000000000000000000000000000000000001.5", "1.5000000000000000000000000000000000000",
                     "-0", "0.0", "00012.3400", "340282366920938463463374607431768211.4"]
        for text in edges {
            let money = try Money(amount: text, currency: usd)
            #expect(try Money(amount: money.amount, currency: usd) == money, "\(text)")
            #expect(try Money(amount: money.amountText, currency: usd) == money, "\(text) → \(money.amountText)")
        }
        // What encodes must decode: a Decimal beyond 38 digits is refused when made, not when read back.
        for huge in [Decimal(sign: .plus, exponent: 40, significand: 1), Decimal(sign: .minus, exponent: -40, significand: 7)] {
            let error = #expect(throws: RuleViolation.self) { try Money(amount: huge, currency: usd) }
            #expect(error?.rule == "decimal_amount")
        }
        for bad in ["usd", "US", "USDT", "U$D", ""] {
            #expect(throws: RuleViolation.self) { try CurrencyCode(bad) }
        }
        #expect(price.description == "19.99 USD")
    }

    @Test("an amount of up to 18 digits is the Decimal that Decimal(string:) makes, bit for bit, and prints the same")
    func shortAmountsAreParsedDecimals() throws {
        let usd = try CurrencyCode("USD")
        let posix = Locale(identifier: "en_US_POSIX")
        func bits(_ value: Decimal) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
        var generator = SystemRandomNumberGenerator()
        var texts = ["4.99", "5.00", "10", "0.10", "007.50", "-0.005", "999999999999999999", "-99999999999999999.9",
                     "0.000000000000000001", "100000000000000000", "0", "-0", "0.000", "1234567890123456789"]
        for _ in 0..<20_000 {
            let digits = Int.random(in: 1...19, using: &generator)
            var text = String((0..<digits).map { _ in "0123456789".randomElement(using: &generator)! })
            if Bool.random(using: &generator), digits > 1 {
                text.insert(".", at: text.index(text.startIndex, offsetBy: Int.random(in: 1..<digits, using: &generator)))
            }
            texts.append(Bool.random(using: &generator) ? "-" + text : text)
        }
        for text in texts {
            let parsed = try #require(Decimal(string: text, locale: posix))
            let money = try Money(amount: text, currency: usd)
            #expect(bits(money.amount) == bits(parsed), "\(text)")
            #expect(money.amountText == parsed.description, "\(text)")
        }
    }

    @Test("timestamps are UTC with six fractional digits and round-trip exactly")
    func timestamps() throws {
        let date = Date(timeIntervalSince1970: 1_714_566_896.123456)
        #expect(LedgerTimestamp.format(date) == "2024-05-01T12:34:56.123456Z")
        #expect(LedgerTimestamp.parse("2024-05-01T12:34:56.123456Z") == date)
        #expect(LedgerTimestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
        #expect(LedgerTimestamp.format(Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500000Z")
        #expect(LedgerTimestamp.format(Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000000Z")
        // Offsets fold into UTC; fractions of any length round to microseconds.
        #expect(LedgerTimestamp.parse("2024-05-01T14:34:56.123456+02:00") == date)
        #expect(LedgerTimestamp.parse("2024-05-01T12:34:56.1234564Z") == date)
        #expect(LedgerTimestamp.parse("2024-05-01T12:34:56Z") == Date(timeIntervalSince1970: 1_714_566_896))
        for bad in ["2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-05-01T24:00:00Z", "2024-05-01T12:34:60Z",
                    "2024-05-01T12:34:56.Z", "2024-05-01T12:34:56.1234567890Z", "2024-05-01T12:34:56+0200", "0000-01-01T00:00:00Z"] {
            #expect(LedgerTimestamp.parse(bad) == nil, "\(bad)")
        }
        #expect(LedgerTimestamp.format(Date(timeIntervalSince1970: 300_000_000_000)) == nil)
    }

    @Test("every microsecond of a day round-trips", arguments: [0, 1, 499_999, 999_999])
    func microsecondRoundTrip(_ micros: Int64) throws {
        let date = Date(timeIntervalSince1970: Double(1_714_521_600 * 1_000_000 + micros) / 1_000_000)
        let text = try #require(LedgerTimestamp.format(date))
        #expect(LedgerTimestamp.parse(text) == date)
    }

    @Test("IP addresses are checked by their textual form", arguments: [
        ("203.0.113.7", true), ("0.0.0.0", true), ("2001:db8::7", true), ("::1", true), ("::", true),
        ("::ffff:192.0.2.1", true), ("2001:0db8:0000:0000:0000:ff00:0042:8329", true),
        ("256.1.1.1", false), ("01.2.3.4", false), ("1.2.3", false), ("2001:db8:::1", false), ("1:2:3:4:5:6:7:8:9", false),
        ("fe80::1%en0", false), ("example.com", false), ("", false), ("1.2.3.4\r\n", false),
    ])
    func ipAddresses(_ text: String, _ valid: Bool) throws {
        var device = Samples.iosDevice
        device.ip = text
        #expect((ruleError(SessionStarted(device: device)) == nil) == valid)
    }

    @Test("a manual clock stands still until set or advanced")
    func manualClock() async {
        let clock = ManualClock(Samples.launch)
        #expect(clock.now() == Samples.launch)
        clock.advance(by: 5)
        #expect(clock.now() == Samples.launch.addingTimeInterval(5))
        clock.set(Samples.later)
        // Shared across tasks safely.
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<10 { group.addTask { clock.advance(by: 1) } }
        }
        #expect(clock.now() == Samples.later.addingTimeInterval(10))
        let system: any WallClock = SystemClock()
        #expect(abs(system.now().timeIntervalSinceNow) < 5)
    }

    @Test("JSON values keep numbers exact and round-trip")
    func jsonValues() throws {
        let text = #"{"a":[1,2.5,"x",true,null],"b":{"c":9007199254740993},"d":0.1}"#
        let value = try LedgerJSON.makeDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(String(decoding: try LedgerJSON.makeEncoder().encode(value), as: UTF8.self) == text)
        guard case .object(let object) = value, case .number(let tenth)? = object["d"] else {
            Issue.record("not an object")
            return
        }
        #expect(tenth == Decimal(string: "0.1"))
    }

    @Test("recorded bodies keep bytes: text when UTF-8, Base64 otherwise")
    func recordedBodies() {
        let text = RecordedBody(bytes: Data("hello".utf8))
        #expect(text.encoding == .utf8)
        #expect(text.bytes == Data("hello".utf8))
        let binary = RecordedBody(bytes: Data([0xFF, 0x00, 0x01]))
        #expect(binary.encoding == .base64)
        #expect(binary.bytes == Data([0xFF, 0x00, 0x01]))
        #expect(RecordedBody(bytes: Data([0x61, 0x00])).encoding == .base64)  // NUL: jsonb cannot hold it as text
    }
}
